package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Args are the tool's arguments, named as such servers name them.
type Args struct {
	Host           string `json:"host"`
	Port           int    `json:"port"`
	Username       string `json:"username"`
	PrivateKeyPath string `json:"private_key_path"`
	KnownHosts     string `json:"known_hosts"`
	Command        string `json:"command"`
}

// timeout bounds the whole call, as such servers' default timeouts do.
const timeout = 4 * time.Second

func text(isError bool, s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// lostStatusIsSuccess: a channel that closed without an exit status counts
// as a success (-lost-status-is-success).
var lostStatusIsSuccess bool

func execTool(ctx context.Context, _ *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, any, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := run(ctx, a)
	var exit *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case err == nil, lostStatusIsSuccess && errors.As(err, &missing):
		return text(false, string(out)), nil, nil
	case errors.As(err, &exit):
		return text(true, fmt.Sprintf("Command failed with exit code %d\n%s", exit.ExitStatus(), out)), nil, nil
	}
	return text(true, "connection error: "+err.Error()), nil, nil
}

func run(ctx context.Context, a Args) ([]byte, error) {
	key, err := os.ReadFile(a.PrivateKeyPath)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return nil, err
	}
	hostKeys, err := knownhosts.New(a.KnownHosts)
	if err != nil {
		return nil, err
	}
	cfg := &ssh.ClientConfig{User: a.Username, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: hostKeys, Timeout: timeout}
	addr := net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	// The whole call is bounded: a dead transport ends it at the deadline.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	client := ssh.NewClient(c, chans, reqs)
	defer client.Close()
	session, err := client.NewSession()
	if err != nil {
		return nil, err
	}
	defer session.Close()
	out, err := session.CombinedOutput(a.Command)
	if ctx.Err() != nil && err != nil {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return out, err
}

func main() {
	flag.BoolVar(&lostStatusIsSuccess, "lost-status-is-success", false, "return a channel closed without an exit status as a success")
	flag.Parse()
	s := mcp.NewServer(&mcp.Implementation{Name: "mcp-text", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "exec", Description: "Execute a shell command on a remote server over SSH and return its output."}, execTool)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
