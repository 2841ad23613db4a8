package engine

import (
	"errors"
	"net"
)

// Adopt hands the run's cutter a connection accepted elsewhere, for a server
// a test holds at one address while the case behind it changes
// (sshrigtest.Server): the connection is then the case's, as if the tool had
// dialled Addr. A run of the refuse moment has no cutter and refuses it.
func (r *Run) Adopt(c *net.TCPConn) error {
	if r.cutter == nil {
		c.Close()
		return errors.New("engine: case " + r.spec.ID + " accepts no connection")
	}
	return r.cutter.Adopt(c)
}
