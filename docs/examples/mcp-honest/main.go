package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// Args are the tools/call arguments, as sshrig's default template fills them.
type Args struct {
	Addr          string `json:"addr" jsonschema:"host:port of the SSH server"`
	Host          string `json:"host,omitempty"`
	Port          int    `json:"port,omitempty"`
	User          string `json:"user"`
	Identity      string `json:"identity" jsonschema:"path of the private key file"`
	KnownHosts    string `json:"known_hosts" jsonschema:"known_hosts file pinning the host key"`
	Command       string `json:"command" jsonschema:"the remote command"`
	CorrelationID string `json:"correlation_id"`
	Operation     string `json:"operation"`
	DeadlineMS    int64  `json:"deadline_ms" jsonschema:"budget for the whole attempt, in milliseconds"`
}

func sshExec(ctx context.Context, _ *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, result.Result, error) {
	t := tool.Target{Addr: a.Addr, User: a.User, Identity: a.Identity, KnownHosts: a.KnownHosts,
		Command: a.Command, CorrelationID: a.CorrelationID, Operation: a.Operation,
		Deadline: time.Duration(a.DeadlineMS) * time.Millisecond}
	if cert := a.Identity + "-cert.pub"; fileExists(cert) { // as OpenSSH's ssh finds it
		t.Certificate = cert
	}
	var stdout bytes.Buffer
	tools.Reference{}.Run(ctx, t, &stdout, os.Stderr)
	r, err := result.Parse(stdout.Bytes())
	if err != nil {
		return nil, result.Result{}, fmt.Errorf("the reference client printed no result: %v", err)
	}
	return &mcp.CallToolResult{IsError: !r.OK}, r, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func main() {
	httpAddr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	flag.Parse()
	s := mcp.NewServer(&mcp.Implementation{Name: "mcp-honest", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ssh_exec", Description: "Run a command on a remote host over SSH; the result says what is known of its outcome."}, sshExec)
	if *httpAddr == "" {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "listening on http://%s/mcp\n", ln.Addr())
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	log.Fatal(http.Serve(ln, mux))
}
