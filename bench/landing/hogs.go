package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// hogs are busy-looping child processes that load the CPU while the
// benchmark runs. Each is a shell loop in a process group of its own (so a
// terminal's Ctrl-C reaches the benchmark, which stops them, and not them
// alone), started with a parent-death signal, so they die with the
// benchmark's process even when it is killed.
type hogs struct{ cmds []*exec.Cmd }

func startHogs(n int) (*hogs, error) {
	h := &hogs{}
	for range n {
		cmd := exec.Command("/bin/sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			h.Stop()
			return nil, fmt.Errorf("hogs: %w", err)
		}
		h.cmds = append(h.cmds, cmd)
	}
	return h, nil
}

// PIDs are the hogs' process ids.
func (h *hogs) PIDs() []int {
	var out []int
	for _, c := range h.cmds {
		out = append(out, c.Process.Pid)
	}
	return out
}

// Stop kills every hog's process group and reaps it. It is safe to call
// more than once.
func (h *hogs) Stop() error {
	if h == nil {
		return nil
	}
	var errs []error
	for _, c := range h.cmds {
		if err := syscall.Kill(-c.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("hogs: kill %d: %w", c.Process.Pid, err))
		}
		c.Wait() // killed: the error says so
	}
	h.cmds = nil
	return errors.Join(errs...)
}

// loadavg is the first three fields of /proc/loadavg ("" where unreadable).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
