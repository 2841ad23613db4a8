package rig

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A tool that has not answered when its budget and grace are spent hangs;
// but a tool kept waiting by the machine (for a core, for the disk, for
// memory, by the hypervisor) meanwhile would have answered that much
// earlier on a machine of its own. So before it counts as hung, the time
// the machine may have made it wait is given back: the rig waits that
// much longer, and only a tool still silent then hangs. Such a hang would
// have been one alone too, and is not run again alone (confirm.go). When
// the machine made it wait longer than one grace, nothing is given back:
// the hang stands as seen while the machine was busy, and is confirmed
// alone as before.
//
// How long the machine made the case wait is bounded from above, not
// measured per task: Linux's pressure stall information (/proc/pressure)
// counts the time during which at least one task waited for a core, for
// I/O or for memory, so no single task of the tool or of the rig waited
// longer than that, nor did the tool's critical path (waits that overlap
// are counted once, waits one after another add up, as on the path). To
// it are added the time the hypervisor took the cores away (/proc/stat's
// steal) and, for goroutines of this process waiting for a P while every P
// ran other work, this process's CPU time over GOMAXPROCS.

// waitClock bounds how long the machine made anything wait since it started.
type waitClock struct {
	start waitSample
	known bool // /proc/pressure could be read: without it nothing is given back
}

// waitSample is the machine's wait counters at one instant.
type waitSample struct {
	stalled time.Duration // cpu, io and memory "some" totals
	steal   time.Duration
	selfCPU time.Duration
}

// startWaitClock starts the run's clock of the machine's wait and returns
// its reading.
func (r *runner) startWaitClock() func() (time.Duration, bool) {
	if r.o.machineWait != nil {
		return r.o.machineWait()
	}
	return startWaitClock().waited
}

func startWaitClock() waitClock {
	s, ok := readWaitSample()
	return waitClock{start: s, known: ok}
}

// waited is the bound since the clock started; ok is false when it cannot
// be known.
func (w waitClock) waited() (time.Duration, bool) {
	if !w.known {
		return 0, false
	}
	now, ok := readWaitSample()
	if !ok {
		return 0, false
	}
	d := (now.stalled - w.start.stalled) + (now.steal - w.start.steal) +
		(now.selfCPU-w.start.selfCPU)/time.Duration(max(1, runtime.GOMAXPROCS(0)))
	return max(d, 0), true
}

func readWaitSample() (waitSample, bool) {
	var s waitSample
	for _, kind := range []string{"cpu", "io", "memory"} {
		b, err := os.ReadFile("/proc/pressure/" + kind)
		if err != nil {
			return waitSample{}, false
		}
		some, ok := parsePressureSome(b)
		if !ok {
			return waitSample{}, false
		}
		s.stalled += some
	}
	if st, ok := readCPUStat(); ok {
		s.steal = time.Duration(st.steal) * time.Second / userHz
	}
	s.selfCPU = cpuOf(syscall.RUSAGE_SELF)
	return s, true
}

// parsePressureSome reads the "some" line's total (microseconds) of a
// /proc/pressure file: "some avg10=0.00 avg60=0.00 avg300=0.00 total=1234".
func parsePressureSome(b []byte) (time.Duration, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				us, err := strconv.ParseUint(v, 10, 63)
				if err != nil {
					return 0, false
				}
				return time.Duration(us) * time.Microsecond, true
			}
		}
	}
	return 0, false
}

// userHz is the kernel's clock tick for /proc/stat's jiffies, 100 on every
// Linux architecture Go runs on.
const userHz = 100

// awaitTool waits for done until limit has passed since clock started
// (clock is a waitClock's waited), then
// gives back the time the machine made the case wait (up to giveBack) and
// waits again, until no more was taken than given back. hung is false when
// done closed first (or ctx ended); givenBack, for a hang, says the wait was
// given back whole, so the hang would have been one alone too.
func awaitTool(ctx context.Context, done <-chan struct{}, clock func() (time.Duration, bool), limit, giveBack time.Duration) (hung, givenBack bool, waited time.Duration) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var given time.Duration
	for {
		select {
		case <-done:
			return false, false, waited
		case <-ctx.Done():
			return false, false, waited
		case <-timer.C:
		}
		w, ok := clock()
		waited = w
		switch {
		case !ok || w > giveBack:
			return true, false, w
		case w <= given:
			return true, true, w
		}
		// Give back a little more than was taken, or the few microseconds
		// taken while waiting (this very read among them) would never let
		// the wait end.
		timer.Reset(w - given + givingQuantum)
		given = w + givingQuantum
	}
}

// givingQuantum is what the rig gives back beyond the wait it measured.
const givingQuantum = 50 * time.Millisecond
