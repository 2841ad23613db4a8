package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

type Args struct {
	Addr          string `json:"addr"`
	Host          string `json:"host,omitempty"`
	Port          int    `json:"port,omitempty"`
	User          string `json:"user"`
	Identity      string `json:"identity"`
	KnownHosts    string `json:"known_hosts"`
	Command       string `json:"command"`
	CorrelationID string `json:"correlation_id"`
	Operation     string `json:"operation"`
	DeadlineMS    int64  `json:"deadline_ms"`
}

func run(ctx context.Context, a Args) error {
	key, err := os.ReadFile(a.Identity)
	if err != nil {
		return err
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return err
	}
	if cert, err := os.ReadFile(a.Identity + "-cert.pub"); err == nil {
		if pub, _, _, _, err := ssh.ParseAuthorizedKey(cert); err == nil {
			if c, ok := pub.(*ssh.Certificate); ok {
				if cs, err := ssh.NewCertSigner(c, signer); err == nil {
					signer = cs
				}
			}
		}
	}
	hk, err := knownhosts.New(a.KnownHosts)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Duration(a.DeadlineMS) * time.Millisecond)
	conn, err := net.DialTimeout("tcp", a.Addr, time.Until(deadline))
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(deadline) // the one thing it gets right: it does not hang
	c, chans, reqs, err := ssh.NewClientConn(conn, a.Addr, &ssh.ClientConfig{User: a.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: hk})
	if err != nil {
		return err
	}
	client := ssh.NewClient(c, chans, reqs)
	defer client.Close()
	s, err := client.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run(a.Command)
}

func sshExec(ctx context.Context, _ *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, any, error) {
	if err := run(ctx, a); err != nil {
		var ee *ssh.ExitError
		if errors.As(err, &ee) {
			//lint:ignore ST1005 the text is what the agent reads: published servers send "Error: …" as is
			return nil, nil, fmt.Errorf("Error: command failed: %v", err)
		}
		//lint:ignore ST1005 the text is what the agent reads: published servers send "Error: …" as is
		return nil, nil, fmt.Errorf("Error: %v", err)
	}
	b, _ := json.Marshal(map[string]any{"ok": true, "category": "succeeded", "operation": a.Operation,
		"retry": "never", "correlation_id": a.CorrelationID})
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcp-naive", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ssh_exec", Description: "Run a command over SSH."}, sshExec)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
