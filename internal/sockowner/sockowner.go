package sockowner

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNotFound is returned when no socket has the two ends.
var ErrNotFound = errors.New("sockowner: no such socket")

// Inode finds the inode of the TCP socket whose local end is local and whose
// remote end is remote, among the sockets of the calling thread's network
// namespace (/proc/thread-self/net: a thread locked into another namespace
// sees that namespace's sockets).
func Inode(local, remote netip.AddrPort) (uint64, error) {
	files := []string{"/proc/thread-self/net/tcp6"}
	if local.Addr().Is4() || local.Addr().Is4In6() {
		files = []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"}
	}
	for _, name := range files {
		ino, err := findInode(name, local, remote)
		if err == nil {
			return ino, nil
		}
		if !errors.Is(err, ErrNotFound) && !errors.Is(err, os.ErrNotExist) {
			return 0, err
		}
	}
	return 0, fmt.Errorf("%w: %s -> %s", ErrNotFound, local, remote)
}

func findInode(name string, local, remote netip.AddrPort) (uint64, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		l, err1 := parseAddr(fields[1])
		r, err2 := parseAddr(fields[2])
		if err1 != nil || err2 != nil {
			continue
		}
		if same(l, local) && same(r, remote) {
			return strconv.ParseUint(fields[9], 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, ErrNotFound
}

func same(a, b netip.AddrPort) bool {
	return a.Port() == b.Port() && a.Addr().Unmap() == b.Addr().Unmap()
}

// parseAddr parses /proc/net/tcp's "0100007F:1F90": the address in hex, each
// 32-bit word in host (little-endian) order, and the port in hex.
func parseAddr(s string) (netip.AddrPort, error) {
	host, port, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("sockowner: bad address %q", s)
	}
	raw, err := hex.DecodeString(host)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("sockowner: bad address %q", s)
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	p, err := strconv.ParseUint(port, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("sockowner: bad port in %q", s)
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr, uint16(p)), nil
}

// Owners lists the processes with a file descriptor on socket inode ino.
func Owners(ino uint64) ([]int, error) {
	want := "socket:[" + strconv.FormatUint(ino, 10) + "]"
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir("/proc/" + d.Name() + "/fd")
		if err != nil {
			continue // gone, or not ours to look at
		}
		for _, fd := range fds {
			if link, err := os.Readlink("/proc/" + d.Name() + "/fd/" + fd.Name()); err == nil && link == want {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, nil
}

// Kill sends SIGKILL to each pid through a pidfd (so a recycled pid is never
// hit) and waits until every one has exited or ctx ends.
func Kill(ctx context.Context, pids []int) error { return Signal(ctx, pids, unix.SIGKILL) }

// Signal sends sig to each pid through a pidfd and waits until every one
// has exited (SIGKILL, SIGTERM: a process that ends on its own terms) or,
// for SIGSTOP, has stopped, or until ctx ends.
func Signal(ctx context.Context, pids []int, sig unix.Signal) error {
	var errs []error
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue // already gone
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("sockowner: pidfd %d: %w", pid, err))
			continue
		}
		wait, what := func() error { return waitExit(ctx, fd) }, "exit"
		if sig == unix.SIGSTOP {
			wait, what = func() error { return waitStopped(ctx, pid, fd) }, "stop"
		}
		if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("sockowner: %v to %d: %w", unix.SignalName(sig), pid, err))
		} else if err := wait(); err != nil {
			errs = append(errs, fmt.Errorf("sockowner: %d did not %s: %w", pid, what, err))
		}
		unix.Close(fd)
	}
	return errors.Join(errs...)
}

// waitStopped waits until pid (whose pidfd is fd) is stopped, or gone. The
// kernel announces a stop only to the parent, so its record is read: the
// state field of /proc/PID/stat, every millisecond.
func waitStopped(ctx context.Context, pid, fd int) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if err := unix.PidfdSendSignal(fd, 0, nil, 0); errors.Is(err, unix.ESRCH) {
			return nil // gone
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			// pid (comm) STATE ...: comm may hold spaces and parentheses.
			if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
				return nil
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// waitExit waits for the pidfd to become readable, which it does when the
// process exits.
func waitExit(ctx context.Context, fd int) error {
	for {
		timeout := 100
		if dl, ok := ctx.Deadline(); ok {
			timeout = max(0, min(timeout, int(time.Until(dl).Milliseconds())))
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, timeout)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
		if n > 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
