package procs

import (
	"os"
	"strconv"
	"strings"
)

// Proc is one live process as /proc/PID/stat describes it.
type Proc struct {
	PID, PPID, PGID int
	// Start is when the process started, in clock ticks since boot: with
	// PID, it names one process even after the pid is reused.
	Start uint64
}

// Scan lists the pids of live processes for which match is true. Zombies,
// which need only reaping, are left out; a process that ends while the table
// is read is skipped.
func Scan(match func(Proc) bool) []int {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if p, ok := read(pid, d.Name()); ok && match(p) {
			out = append(out, pid)
		}
	}
	return out
}

// read parses /proc/NAME/stat for process pid; false for a zombie or a
// process gone meanwhile.
func read(pid int, name string) (Proc, bool) {
	b, err := os.ReadFile("/proc/" + name + "/stat")
	if err != nil {
		return Proc{}, false
	}
	// The command name may hold spaces and parentheses; the fields
	// resume after its last ")": state, ppid, pgrp, ...
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 || fields[0] == "Z" {
		return Proc{}, false
	}
	ppid, _ := strconv.Atoi(fields[1])
	pgid, _ := strconv.Atoi(fields[2])
	start, _ := strconv.ParseUint(fields[19], 10, 64) // stat's field 22
	return Proc{PID: pid, PPID: ppid, PGID: pgid, Start: start}, true
}

// Self is this process as Scan sees it.
func Self() (Proc, bool) { return read(os.Getpid(), "self") }

// Alive reports whether the process pid that started at start still runs.
func Alive(pid int, start uint64) bool {
	p, ok := read(pid, strconv.Itoa(pid))
	return ok && p.Start == start
}

// Group lists the live processes in process group pgid.
func Group(pgid int) []int {
	return Scan(func(p Proc) bool { return p.PGID == pgid })
}

// Children lists the live processes whose parent is ppid.
func Children(ppid int) []int {
	return Scan(func(p Proc) bool { return p.PPID == ppid })
}

// Named lists the live processes, this one aside, whose command line
// (arguments joined by spaces) contains s.
func Named(s string) []int {
	self := os.Getpid()
	return Scan(func(p Proc) bool {
		if p.PID == self {
			return false
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/cmdline")
		return err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s)
	})
}
