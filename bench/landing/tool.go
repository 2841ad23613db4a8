package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// toolResult is what the benchmark's tool saw of its one exec.
type toolResult struct {
	// Closed: the session ended with its channel closed by the server
	// (Wait returned nil or an exit error): the tool saw the whole
	// exchange.
	Closed bool
	Err    error
	Read   int64 // bytes the tool read from its connection
	Out    []byte
}

// countingConn counts the bytes the tool reads.
type countingConn struct {
	net.Conn
	read atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// runTool is the workload's tool: one SSH connection to addr, one exec of
// cmd, stdout kept. It ends when the session ends or ctx is done (the
// benchmark ends a tool whose transport was blackholed once the server is
// done with the exec). handshake bounds connect and key exchange.
func runTool(ctx context.Context, addr string, cfg *gossh.ClientConfig, cmd string, handshake time.Duration) toolResult {
	d := net.Dialer{Timeout: handshake}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return toolResult{Err: err}
	}
	conn := &countingConn{Conn: raw}
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	defer stop()
	raw.SetDeadline(time.Now().Add(handshake))
	c, chans, reqs, err := gossh.NewClientConn(conn, addr, cfg)
	if err != nil {
		raw.Close()
		return toolResult{Err: err, Read: conn.read.Load()}
	}
	raw.SetDeadline(time.Time{})
	client := gossh.NewClient(c, chans, reqs)
	defer client.Close()
	sess, err := client.NewSession()
	if err != nil {
		return toolResult{Err: err, Read: conn.read.Load()}
	}
	defer sess.Close()
	var out bytes.Buffer
	sess.Stdout = &out
	if err := sess.Start(cmd); err != nil {
		return toolResult{Err: err, Read: conn.read.Load()}
	}
	err = sess.Wait()
	var exitErr *gossh.ExitError
	closed := err == nil || errors.As(err, &exitErr)
	client.Close()
	return toolResult{Closed: closed, Err: err, Read: conn.read.Load(), Out: out.Bytes()}
}
