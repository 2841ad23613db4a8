package rig

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"os"
	"strings"

	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/result"
)

// secretsOf returns what must never appear in a tool's output: the private
// key file's contents in every encoding a tool might print (PEM text, the
// base64 body joined or line by line).
func secretsOf(identityFile string) ([]verdict.Secret, error) {
	raw, err := os.ReadFile(identityFile)
	if err != nil {
		return nil, err
	}
	pemText := bytes.TrimSpace(raw)
	secrets := []verdict.Secret{{Name: "private key (PEM)", Data: pemText}}
	// A tool that prints JSON escapes the newlines.
	if quoted, err := json.Marshal(string(pemText)); err == nil {
		secrets = append(secrets, verdict.Secret{Name: "private key (PEM, JSON-escaped)", Data: quoted[1 : len(quoted)-1]})
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return secrets, nil
	}
	var body []string
	inBody := false
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "-----BEGIN"):
			inBody = true
		case strings.HasPrefix(line, "-----END"):
			inBody = false
		case inBody && line != "":
			body = append(body, line)
		}
	}
	if len(body) > 0 {
		secrets = append(secrets, verdict.Secret{Name: "private key (base64 body)", Data: []byte(strings.Join(body, ""))})
		for _, line := range body {
			// Any full line of the body is unique to this key.
			if len(line) >= 40 {
				secrets = append(secrets, verdict.Secret{Name: "private key (a base64 line)", Data: []byte(line)})
			}
		}
	}
	return secrets, nil
}

// identitySecrets adds the identity file's path: on stdout, where the agent
// reads it, a path to a readable key exposes the key.
func identitySecrets(identityFile string) ([]verdict.Secret, error) {
	s, err := secretsOf(identityFile)
	if err != nil {
		return nil, err
	}
	return append(s, verdict.Secret{Name: "identity file's path", Data: []byte(identityFile), ResultOnly: true}), nil
}

// redact replaces every secret in b, so reports and transcripts never carry
// key material even when a tool printed it.
func redact(b []byte, secrets []verdict.Secret) []byte {
	for _, s := range secrets {
		if len(s.Data) > 0 && bytes.Contains(b, s.Data) {
			b = bytes.ReplaceAll(b, s.Data, []byte("[REDACTED: "+s.Name+"]"))
		}
	}
	return b
}

// redactResult returns a copy of r with secrets removed from its strings.
func redactResult(r *result.Result, secrets []verdict.Secret) *result.Result {
	if r == nil {
		return nil
	}
	c := *r
	c.Message = string(redact([]byte(c.Message), secrets))
	c.Operation = string(redact([]byte(c.Operation), secrets))
	c.CorrelationID = string(redact([]byte(c.CorrelationID), secrets))
	return &c
}
