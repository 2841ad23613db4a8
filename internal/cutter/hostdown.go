package cutter

import (
	"errors"
	"net"
	"slices"
	"syscall"
	"time"

	"github.com/sshrig/sshrig/fault"
)

// A host that goes down (fault.Reboot) says nothing to the connections it
// had: the tool's segments go unanswered. Once it is back up, its kernel
// has no record of them, and the tool's next segment meets an RST. Down and
// Up make that of the case's connections; what the server does meanwhile
// (its processes killed, its connections closed) never reaches the tool.

// Down silences every open connection as a host that went down does, and
// holds new connections (HoldNew) until Up: their SYN is answered, their
// first bytes are not. It returns the connections it silenced.
func (c *Cutter) Down() []int {
	c.HoldNew()
	c.mu.Lock()
	conns := slices.Clone(c.conns)
	c.mu.Unlock()
	var downed []int
	for _, cn := range conns {
		cn.mu.Lock()
		if cn.state != stOpen {
			cn.mu.Unlock()
			continue
		}
		cn.stopPumpsLocked(fault.Reboot) // releases cn.mu
		cn.mu.Lock()
		if cn.state == stCutting {
			cn.state = stCut
			cn.notifyLocked()
			downed = append(downed, cn.n)
		}
		cn.mu.Unlock()
	}
	return downed
}

// Up brings the host back: each connection Down silenced meets an RST at
// the tool's next segment (data, a keepalive, its FIN), and new connections
// reach the server again.
func (c *Cutter) Up() {
	c.mu.Lock()
	conns := slices.Clone(c.conns)
	c.mu.Unlock()
	for _, cn := range conns {
		cn.mu.Lock()
		if cn.state == stCut && cn.kind == fault.Reboot && !cn.client.closed {
			// Holding cn.mu in a live state: Close has not reached this
			// connection's wg.Wait yet.
			c.wg.Go(cn.resetAtNextSegment)
		}
		cn.mu.Unlock()
	}
	c.OpenNew()
}

// resetAtNextSegment waits for the tool's next segment on a connection of
// a host that came back, and answers it with an RST.
func (cn *conn) resetAtNextSegment() {
	cn.client.SetReadDeadline(time.Time{})
	var b [1]byte
	_, err := cn.client.Read(b[:])
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.client.closed || errors.Is(err, net.ErrClosed) {
		return // Cutter.Close got there first
	}
	cn.client.SetLinger(0)
	cn.client.close()
	cn.up.close()
}

// passReset hands a reset of the server's side on to the tool: once what
// was delivered has left (as a reset cut waits), the client socket is set
// to abort, so its close (failLocked) sends an RST rather than a FIN. A
// server that crashed resets its connections; the tool must meet what it
// would meet without the cutter between them.
func (cn *conn) passReset(err error) {
	if !errors.Is(err, syscall.ECONNRESET) {
		return
	}
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.state != stOpen {
		return // a cut owns the sockets
	}
	awaitSent(cn.client.TCPConn, sentLimit)
	cn.client.SetLinger(0)
}
