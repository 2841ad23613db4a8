package cutter

import (
	"net"

	"golang.org/x/sys/unix"
)

// unsent returns how many bytes sit in c's send queue not yet transmitted
// (SIOCOUTQNSD), or -1 if that cannot be read. Unacknowledged bytes that were
// transmitted are not counted: on loopback they are already in the peer's
// receive queue, so an RST no longer takes them away.
func unsent(c *net.TCPConn) int64 {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1
	}
	n := -1
	if err := rc.Control(func(fd uintptr) {
		v, err := unix.IoctlGetInt(int(fd), unix.SIOCOUTQNSD)
		if err == nil {
			n = v
		}
	}); err != nil {
		return -1
	}
	return int64(n)
}
