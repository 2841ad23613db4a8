package cutter

import (
	"net"
	"time"

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

// awaitSent waits, up to limit, until c's send queue holds no untransmitted
// byte, on the kernel's own signal: with TCP_NOTSENT_LOWAT at 1 the socket
// is writable exactly when nothing is left unsent, and poll(2) on it sleeps
// until the kernel says so (the runtime's poller would not wake: nothing
// asked the kernel to report this change). It returns the bytes still
// unsent when it gave up (0 when all went out, -1 if unknown).
func awaitSent(c *net.TCPConn, limit time.Duration) int64 {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1
	}
	left := int64(-1)
	deadline := time.Now().Add(limit)
	rc.Control(func(fd uintptr) {
		if unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, 1) != nil {
			return
		}
		for {
			v, err := unix.IoctlGetInt(int(fd), unix.SIOCOUTQNSD)
			if err != nil {
				return
			}
			left = int64(v)
			ms := int(time.Until(deadline).Milliseconds())
			if v == 0 || ms <= 0 {
				return
			}
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			if n, err := unix.Poll(fds, ms); err != nil && err != unix.EINTR || n == 0 && err == nil {
				return
			}
		}
	})
	return left
}
