package rig

import (
	"github.com/sshrig/sshrig/internal/secret"
	"github.com/sshrig/sshrig/result"
)

// redactResult returns a copy of r with secrets removed from its strings.
func redactResult(r *result.Result, secrets []secret.Secret) *result.Result {
	if r == nil {
		return nil
	}
	c := *r
	c.Message = string(secret.Redact([]byte(c.Message), secrets))
	c.Operation = string(secret.Redact([]byte(c.Operation), secrets))
	c.CorrelationID = string(secret.Redact([]byte(c.CorrelationID), secrets))
	if c.Hosts != nil {
		c.Hosts = append([]result.HostResult(nil), c.Hosts...)
		for i := range c.Hosts {
			c.Hosts[i].Host = string(secret.Redact([]byte(c.Hosts[i].Host), secrets))
			c.Hosts[i].Message = string(secret.Redact([]byte(c.Hosts[i].Message), secrets))
		}
	}
	return &c
}
