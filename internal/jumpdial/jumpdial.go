package jumpdial

import (
	"context"
	"net"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// Through makes an SSH connection to the jump host over first (already
// connected to jumpAddr, which names it for host key checking) and opens a
// tunnel to target. The returned connection carries the tunnel; closing it
// closes the jump host's connection too. A cancelled ctx, or a deadline
// that passes, closes both: a tunnel has no deadlines of its own (the SSH
// library refuses them), so a silent hop must not stall a caller's read.
func Through(ctx context.Context, first net.Conn, jumpAddr string, cfg *gossh.ClientConfig, target string) (net.Conn, error) {
	stop := context.AfterFunc(ctx, func() { first.Close() })
	defer stop()
	c, chans, reqs, err := gossh.NewClientConn(first, jumpAddr, cfg)
	if err != nil {
		first.Close()
		return nil, err
	}
	jump := gossh.NewClient(c, chans, reqs)
	tunnel, err := jump.DialContext(ctx, "tcp", target)
	if err != nil {
		jump.Close()
		return nil, err
	}
	return &Conn{Conn: tunnel, jump: jump}, nil
}

// Conn is a tunnel to the target through a jump host.
type Conn struct {
	net.Conn
	jump *gossh.Client

	mu    sync.Mutex
	timer *time.Timer
}

// Jump is the SSH connection to the jump host: a caller that checks the
// first hop's liveness sends its keepalives there.
func (c *Conn) Jump() *gossh.Client { return c.jump }

// Close closes the tunnel and the jump host's connection.
func (c *Conn) Close() error {
	c.SetDeadline(time.Time{})
	err := c.Conn.Close()
	c.jump.Close()
	return err
}

// SetDeadline closes the connection when t passes (the zero time: never).
func (c *Conn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if !t.IsZero() {
		c.timer = time.AfterFunc(time.Until(t), func() { c.Conn.Close(); c.jump.Close() })
	}
	return nil
}

// SetReadDeadline is SetDeadline: a tunnel cannot time out one direction.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.SetDeadline(t) }

// SetWriteDeadline is SetDeadline.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.SetDeadline(t) }
