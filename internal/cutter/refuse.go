//go:build unix

package cutter

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Refused holds an address where nothing accepts TCP connections.
type Refused struct {
	addr string

	mu     sync.Mutex
	fd     int
	closed bool
}

// Refusing returns an address on 127.0.0.1 where every TCP connect fails with
// ECONNREFUSED, for the refuse moment. It binds a TCP socket without listening
// on it: the kernel answers a SYN to a port with no listener with an RST, and
// the bound socket keeps the port from being taken by anyone else (bind fails
// with EADDRINUSE, and the kernel does not hand a bound port out as an
// ephemeral one). A merely closed port would do the same only until someone
// reused it. Close releases the port.
func Refusing() (*Refused, error) {
	return RefusingOn(netip.AddrFrom4([4]byte{127, 0, 0, 1}))
}

// RefusingOn is Refusing on addr, an IPv4 address of the calling thread's
// network namespace (the kernel network's server address, from a thread
// inside the server's namespace).
func RefusingOn(addr netip.Addr) (*Refused, error) {
	if !addr.Is4() {
		return nil, fmt.Errorf("cutter: refusing: %s is not an IPv4 address", addr)
	}
	// Hold ForkLock so that no child started meanwhile inherits the fd
	// before it is close-on-exec (SOCK_CLOEXEC is not portable).
	syscall.ForkLock.RLock()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("cutter: refusing: socket: %w", err)
	}
	// No SO_REUSEADDR, on purpose: Linux lets two sockets that both set it
	// share a port as long as neither listens, and Go's Listen sets it. Left
	// off, any other bind of the port fails.
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: addr.As4()}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("cutter: refusing: bind: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("cutter: refusing: getsockname: %w", err)
	}
	in4, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		unix.Close(fd)
		return nil, fmt.Errorf("cutter: refusing: unexpected socket address %T", sa)
	}
	return &Refused{
		addr: net.JoinHostPort(addr.String(), strconv.Itoa(in4.Port)),
		fd:   fd,
	}, nil
}

// Addr is the refusing address, "host:port".
func (r *Refused) Addr() string { return r.addr }

// Close releases the port. It is idempotent.
func (r *Refused) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if err := unix.Close(r.fd); err != nil {
		return fmt.Errorf("cutter: refusing: close: %w", err)
	}
	return nil
}
