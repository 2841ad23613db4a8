package kernelnet

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/sshrig/sshrig/internal/procs"
)

// markerPrefix starts the alias the rig gives the loopback of each
// namespace it makes: "sshrig kernel network, rig PID START". An anonymous
// namespace has no name to find it by; the alias says whose it is, and
// whether that rig still runs.
const markerPrefix = "sshrig kernel network, rig "

func marker() (string, error) {
	self, ok := procs.Self()
	if !ok {
		return "", errors.New("kernelnet: this process is not in /proc")
	}
	return fmt.Sprintf("%s%d %d", markerPrefix, self.PID, self.Start), nil
}

// owner parses a marker: the rig's pid and start time.
func owner(alias string) (pid int, start uint64, ok bool) {
	rest, found := strings.CutPrefix(alias, markerPrefix)
	if !found {
		return 0, 0, false
	}
	p, s, found := strings.Cut(rest, " ")
	if !found {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(p)
	start, err2 := strconv.ParseUint(s, 10, 64)
	return pid, start, err1 == nil && err2 == nil
}

// Namespace is a network namespace the rig made that some process still
// lives in.
type Namespace struct {
	ID   string // net:[inode]
	Rig  int    // the pid of the rig that made it
	Gone bool   // that rig no longer runs
	PIDs []int  // the processes living in it
}

// Namespaces lists the namespaces rigs made that processes live in, this
// process's own aside. A namespace no process lives in and no rig holds is
// already gone: the kernel freed it.
func Namespaces() ([]Namespace, error) {
	ownNS, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return nil, fmt.Errorf("kernelnet: %w", err)
	}
	byNS := map[string][]int{}
	procs.Scan(func(p procs.Proc) bool {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", p.PID))
		if err == nil && ns != ownNS {
			byNS[ns] = append(byNS[ns], p.PID)
		}
		return false
	})
	var out []Namespace
	for ns, pids := range byNS {
		rig, start, ok := markerOf(pids[0])
		if !ok {
			continue
		}
		out = append(out, Namespace{ID: ns, Rig: rig, Gone: !procs.Alive(rig, start), PIDs: pids})
	}
	return out, nil
}

// markerOf reads the marker of pid's network namespace: ok when a rig
// made it.
func markerOf(pid int) (rig int, start uint64, ok bool) {
	h, err := netns.GetFromPid(pid)
	if err != nil {
		return 0, 0, false // gone meanwhile, or not ours to read
	}
	defer h.Close()
	nh, err := netlink.NewHandleAt(h)
	if err != nil {
		return 0, 0, false
	}
	defer nh.Close()
	lo, err := nh.LinkByName("lo")
	if err != nil {
		return 0, 0, false
	}
	return owner(lo.Attrs().Alias)
}

// GC kills the processes living in namespaces of rigs that no longer run:
// tools (or their children) that outlived a crashed or killed rig and keep
// its namespace alive. Once the last is gone the kernel frees the
// namespace and whatever is in it. Namespaces of running rigs are theirs.
// It returns the namespaces it emptied, with the processes it killed.
func GC() ([]Namespace, error) {
	all, err := Namespaces()
	if err != nil {
		return nil, err
	}
	var errs []error
	var emptied []Namespace
	for _, ns := range all {
		if !ns.Gone {
			continue
		}
		for _, pid := range ns.PIDs {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("kernelnet: kill %d: %w", pid, err))
			}
		}
		emptied = append(emptied, ns)
	}
	return emptied, errors.Join(errs...)
}
