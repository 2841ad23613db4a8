package cutter

import "net"

// Adopt proxies tc, a connection accepted by the cutter's own listener
// (acceptLoop) or by another one, alike: it gets the next connection number, its own
// upstream connection with the case's preamble, its pumps, and it waits
// while new connections are held (HoldNew). A front that keeps one address
// while the case behind it changes (sshrigtest's held server) hands its
// connections on this way: an extra hop in front of the cutter would put a
// second buffer and a second socket between the cut and the tool, and a
// reset there could drop bytes the flush rule promised were delivered.
//
// Once the cutter is closed, Adopt closes tc and returns ErrClosed.
func (c *Cutter) Adopt(tc *net.TCPConn) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		tc.Close()
		return ErrClosed
	}
	cn := newConn(c.opts.connBase+len(c.conns)+1, tc)
	c.conns = append(c.conns, cn)
	gate := c.gate
	c.mu.Unlock()

	if c.opts.onAccept != nil {
		c.opts.onAccept(cn.n)
	}
	// Close may have run since the registration; it then already closed
	// the client socket and marked the connection closed. Checking under
	// cn.mu also orders this wg.Go before Close's wg.Wait.
	cn.mu.Lock()
	if cn.state == stDialing {
		c.wg.Go(func() {
			if gate != nil {
				select {
				case <-gate:
				case <-c.dialCtx.Done():
				}
			}
			c.dial(cn)
		})
	}
	cn.mu.Unlock()
	return nil
}
