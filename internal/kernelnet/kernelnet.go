package kernelnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The pair's addresses: link-local, inside the two namespaces only.
var (
	ToolAddr   = netip.MustParseAddr("169.254.83.1")
	ServerAddr = netip.MustParseAddr("169.254.83.2")
)

const (
	prefixLen  = 30
	toolLink   = "sshrig-t"
	serverLink = "sshrig-s"
	// linkUpTimeout bounds the wait for the veth pair's carrier.
	linkUpTimeout = 10 * time.Second
)

// ErrNeedsPrivilege is wrapped by New's error when the rig may not create
// network namespaces.
var ErrNeedsPrivilege = errors.New("--net kernel needs CAP_NET_ADMIN: run sshrig as root, " +
	"or inside an unprivileged user namespace (unshare --user --map-root-user --net sshrig ...)")

// Net is one kernel network: the tool's namespace and the server's, joined
// by a veth pair. Its methods are safe for concurrent use.
type Net struct {
	tool, server netns.NsHandle
	faults       *faults

	closeOnce sync.Once
	closeErr  error
}

// New creates the two namespaces and the veth pair between them and waits
// until the pair carries packets. Close frees them.
func New(ctx context.Context) (*Net, error) {
	tool, err := newNamespace()
	if err != nil {
		return nil, err
	}
	server, err := newNamespace()
	if err != nil {
		tool.Close()
		return nil, err
	}
	n := &Net{tool: tool, server: server}
	if err := n.wire(ctx); err != nil {
		n.Close()
		return nil, err
	}
	if n.faults, err = newFaults(server); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// newNamespace unshares a fresh network namespace on a locked thread and
// returns a handle to it; the thread goes back to the namespace it was in.
// A thread that cannot go back stays locked, so the runtime ends it with its
// goroutine rather than let another goroutine run in the wrong namespace.
func newNamespace() (netns.NsHandle, error) {
	type result struct {
		h   netns.NsHandle
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("kernelnet: own namespace: %w", err)}
			return
		}
		defer orig.Close()
		h, err := netns.New()
		if err != nil {
			runtime.UnlockOSThread()
			if errors.Is(err, unix.EPERM) {
				err = fmt.Errorf("%w (%v)", ErrNeedsPrivilege, err)
			}
			ch <- result{err: fmt.Errorf("kernelnet: new namespace: %w", err)}
			return
		}
		if err := netns.Set(orig); err != nil {
			h.Close()
			ch <- result{err: fmt.Errorf("kernelnet: back to own namespace: %w", err)}
			return // thread stays locked and dies
		}
		runtime.UnlockOSThread()
		ch <- result{h: h}
	}()
	r := <-ch
	return r.h, r.err
}

// wire creates the veth pair in the tool's namespace with its peer in the
// server's, addresses both ends, brings them and both loopbacks up, and
// waits for the tool's end to be operationally up.
func (n *Net) wire(ctx context.Context) error {
	th, err := netlink.NewHandleAt(n.tool)
	if err != nil {
		return fmt.Errorf("kernelnet: netlink in tool namespace: %w", err)
	}
	defer th.Close()
	sh, err := netlink.NewHandleAt(n.server)
	if err != nil {
		return fmt.Errorf("kernelnet: netlink in server namespace: %w", err)
	}
	defer sh.Close()

	// Subscribe before bringing anything up, so the carrier's arrival
	// cannot be missed.
	updates := make(chan netlink.LinkUpdate, 16)
	stop := make(chan struct{})
	defer close(stop)
	if err := netlink.LinkSubscribeAt(n.tool, updates, stop); err != nil {
		return fmt.Errorf("kernelnet: watch links: %w", err)
	}

	mark, err := marker()
	if err != nil {
		return err
	}
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: toolLink},
		PeerName:      serverLink,
		PeerNamespace: netlink.NsFd(int(n.server)),
	}
	if err := th.LinkAdd(veth); err != nil {
		return fmt.Errorf("kernelnet: add veth pair: %w", err)
	}
	for _, end := range []struct {
		h    *netlink.Handle
		name string
		addr netip.Addr
	}{{th, toolLink, ToolAddr}, {sh, serverLink, ServerAddr}} {
		link, err := end.h.LinkByName(end.name)
		if err != nil {
			return fmt.Errorf("kernelnet: %s: %w", end.name, err)
		}
		a := &netlink.Addr{IPNet: &net.IPNet{IP: end.addr.AsSlice(), Mask: net.CIDRMask(prefixLen, 32)}}
		if err := end.h.AddrAdd(link, a); err != nil {
			return fmt.Errorf("kernelnet: address %s on %s: %w", end.addr, end.name, err)
		}
		if err := end.h.LinkSetUp(link); err != nil {
			return fmt.Errorf("kernelnet: %s up: %w", end.name, err)
		}
		lo, err := end.h.LinkByName("lo")
		if err != nil {
			return fmt.Errorf("kernelnet: lo: %w", err)
		}
		if err := end.h.LinkSetUp(lo); err != nil {
			return fmt.Errorf("kernelnet: lo up: %w", err)
		}
		// The marker says whose namespace this is (leftovers.go).
		if err := end.h.LinkSetAlias(lo, mark); err != nil {
			return fmt.Errorf("kernelnet: mark lo: %w", err)
		}
	}
	link, err := th.LinkByName(toolLink)
	if err != nil {
		return fmt.Errorf("kernelnet: %s: %w", toolLink, err)
	}
	if link.Attrs().OperState == netlink.OperUp {
		return nil
	}
	timer := time.NewTimer(linkUpTimeout)
	defer timer.Stop()
	for {
		select {
		case u, ok := <-updates:
			if !ok {
				return errors.New("kernelnet: link watch ended before the veth pair came up")
			}
			if u.Attrs().Name == toolLink && u.Attrs().OperState == netlink.OperUp {
				return nil
			}
		case <-timer.C:
			return fmt.Errorf("kernelnet: veth pair not up after %v", linkUpTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// InTool runs fn on an OS thread inside the tool's namespace: the sockets
// fn creates, and the processes it starts, live there.
func (n *Net) InTool(fn func() error) error { return within(n.tool, fn) }

// InServer runs fn on an OS thread inside the server's namespace.
func (n *Net) InServer(fn func() error) error { return within(n.server, fn) }

func within(ns netns.NsHandle, fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("kernelnet: own namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("kernelnet: enter namespace: %w", err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			ch <- errors.Join(ferr, fmt.Errorf("kernelnet: back to own namespace: %w", err))
			return // thread stays locked and dies
		}
		runtime.UnlockOSThread()
		ch <- ferr
	}()
	return <-ch
}

// Dial connects from the tool's namespace, as a tool there would.
func (n *Net) Dial(ctx context.Context, d *net.Dialer, network, address string) (net.Conn, error) {
	var c net.Conn
	err := n.InTool(func() error {
		var err error
		c, err = d.DialContext(ctx, network, address)
		return err
	})
	return c, err
}

// Listen listens on the server's address in the server's namespace, on a
// port the kernel picks: the tool reaches it across the veth pair.
func (n *Net) Listen() (*net.TCPListener, error) {
	var ln *net.TCPListener
	err := n.InServer(func() error {
		var err error
		ln, err = net.ListenTCP("tcp4", net.TCPAddrFromAddrPort(netip.AddrPortFrom(ServerAddr, 0)))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("kernelnet: listen: %w", err)
	}
	return ln, nil
}

// Close frees the namespaces: the kernel removes the veth pair and every
// table with them. It is idempotent.
func (n *Net) Close() error {
	n.closeOnce.Do(func() {
		var errs []error
		if n.faults != nil {
			errs = append(errs, n.faults.close())
		}
		for _, h := range []netns.NsHandle{n.tool, n.server} {
			if h.IsOpen() {
				errs = append(errs, h.Close())
			}
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// Check says whether this process may create the kernel network, by
// creating and freeing one namespace.
func Check() error {
	h, err := newNamespace()
	if err != nil {
		return err
	}
	return h.Close()
}
