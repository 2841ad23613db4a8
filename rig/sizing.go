package rig

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sshrig/sshrig/report"
)

// How many cases run at once is sized to the tool and the machine: a case
// whose tool has to wait for a core spends its budget waiting, and a tool
// starved past its own deadlines reports a hang, or gives up before the
// moment, for the rig's schedule rather than for a defect of its own
// (docs/performance.md, "How many cases at once").
//
// The preflight is the measurement: its CPU time (this process's, which
// holds the server, the cutter and an in-process tool, and that of its
// children, which are an external tool's process tree and the workload)
// is what one case of this tool costs, and /proc/stat beside it says how
// much of the machine other work held meanwhile (floorShare bounds what it
// takes away). If every case in flight
// and every runnable process of other work wanted a core at once (as they
// do when a run starts), a case's CPU work would take
// caseCPU × (parallel + background) / cores; the rig starts no more cases
// than keep that within starveShare of the budget.

// starveShare is the part of a case's budget it may spend waiting for a core.
const starveShare = 4 // a quarter

// floorShare: however busy the machine is with other work, a run starts at
// least a quarter of the cases the cores hold for this tool alone. Under
// fair scheduling a case's wait grows with every runnable process, the
// run's and the others' alike: when other work alone would starve a case,
// fewer of the run's own only slow the run. Its timing failures are then
// confirmed alone (rig/confirm.go).
const floorShare = 4

// minSized is the fewest cases a sized run starts at once: below it, a run
// under outside load only grows slower, while a timing failure it sees is
// confirmed alone anyway (rig/confirm.go).
const minSized = 4

// cost is what the preflight measured.
type cost struct {
	cpu, wall  time.Duration
	background float64 // cores' worth of other work
	cores      int
	load1      float64
	measured   bool // /proc/stat could be read
}

// costProbe measures a stretch of the run (the preflight) and the machine
// beside it.
type costProbe struct {
	start     time.Time
	cpu0      time.Duration
	stat0     cpuStat
	statOK    bool
	stop      chan struct{}
	done      chan struct{}
	mu        sync.Mutex
	runnable  float64 // sum of procs_running samples, less the sampler
	samples   int
	cores     int
	sampleGap time.Duration
}

// startCostProbe starts measuring.
func startCostProbe() *costProbe {
	p := &costProbe{start: time.Now(), cpu0: processCPU(), cores: runtime.NumCPU(),
		stop: make(chan struct{}), done: make(chan struct{}), sampleGap: 50 * time.Millisecond}
	p.stat0, p.statOK = readCPUStat()
	go p.sample()
	return p
}

// sample reads the run queue's length until stopped: a saturated machine's
// busy time says only that the cores were busy, not how many wanted one.
func (p *costProbe) sample() {
	defer close(p.done)
	t := time.NewTicker(p.sampleGap)
	defer t.Stop()
	for {
		if st, ok := readCPUStat(); ok {
			p.mu.Lock()
			p.runnable += max(0, float64(st.running)-1) // the sampler runs while it reads
			p.samples++
			p.mu.Unlock()
		}
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

// finish ends the measurement.
func (p *costProbe) finish() cost {
	close(p.stop)
	<-p.done
	c := cost{cpu: processCPU() - p.cpu0, wall: time.Since(p.start), cores: p.cores, load1: loadAverage()}
	st, ok := readCPUStat()
	if !ok || !p.statOK || st.total <= p.stat0.total {
		return c
	}
	c.measured = true
	busyCores := float64(st.busy-p.stat0.busy) / float64(st.total-p.stat0.total) * float64(p.cores)
	own := c.cpu.Seconds() / max(c.wall.Seconds(), 1e-3)
	c.background = max(0, busyCores-own)
	if p.samples > 0 {
		if runnable := p.runnable / float64(p.samples); runnable > float64(p.cores) {
			// Saturated: the cores were shared among the runnable
			// processes, ours getting own of them; the rest is the
			// other work's.
			c.background = max(c.background, runnable*(1-own/float64(p.cores)))
		}
	}
	return c
}

// chooseParallel sizes the run: explicit (Options.Parallel given) is obeyed.
func chooseParallel(explicit int, budget time.Duration, c cost) report.ParallelReport {
	p := report.ParallelReport{CaseCPUMS: c.cpu.Milliseconds(), CaseWallMS: c.wall.Milliseconds(), Cores: c.cores,
		BackgroundCores: math.Round(c.background*10) / 10, Load1: c.load1}
	measured := fmt.Sprintf("a case of this tool cost %s of CPU in %s (the preflight); %d cores, other work wanting %.1f cores' worth",
		c.cpu.Round(time.Millisecond), c.wall.Round(time.Millisecond), c.cores, p.BackgroundCores)
	if !c.measured {
		measured = fmt.Sprintf("a case of this tool cost %s of CPU in %s (the preflight); %d cores, their load unknown (no /proc/stat)",
			c.cpu.Round(time.Millisecond), c.wall.Round(time.Millisecond), c.cores)
	}
	if explicit > 0 {
		p.Chosen, p.Explicit = explicit, true
		p.Why = "set by --parallel; " + measured + "; a timing failure while the machine is busy is still confirmed alone"
		return p
	}
	wait := budget / starveShare
	n, floor := DefaultParallel, 1
	alone := math.Inf(1) // cases the cores hold with no other work
	if c.cpu > 0 {
		alone = float64(c.cores) * wait.Seconds() / c.cpu.Seconds()
		floor = int(math.Max(minSized, math.Min(float64(DefaultParallel), math.Floor(alone/floorShare))))
		n = int(math.Max(float64(floor), math.Min(float64(DefaultParallel), math.Floor(alone-c.background))))
	}
	p.Chosen = n
	switch {
	case n == DefaultParallel:
		p.Why = fmt.Sprintf("the most by default (%d): %s; that many leave a case waiting less than %s (a quarter of its %s budget) for a core",
			DefaultParallel, measured, wait, budget)
	case n == minSized && floor == minSized && math.Floor(alone/floorShare) < minSized:
		p.Why = fmt.Sprintf("%s; at least %d at once: under outside load fewer cases only slow the run, and a timing failure is confirmed alone",
			measured, n)
	case n == floor && floor > 1:
		p.Why = fmt.Sprintf("%s; other work holds the machine so that fewer cases would slow the run without giving one a fairer share of it (%d is a quarter of what the cores hold for this tool alone); a timing failure is confirmed alone",
			measured, n)
	default:
		p.Why = fmt.Sprintf("%s; more than %d at once would leave a case waiting more than %s (a quarter of its %s budget) for a core",
			measured, n, wait, budget)
	}
	return p
}

// processCPU is the CPU time of this process and of its children that
// ended (an external tool's process tree, the workload's shells).
func processCPU() time.Duration {
	return cpuOf(syscall.RUSAGE_SELF) + cpuOf(syscall.RUSAGE_CHILDREN)
}

// cpuOf is getrusage's user and system time of who (RUSAGE_SELF,
// RUSAGE_CHILDREN), 0 when unknown.
func cpuOf(who int) time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())
}

// cpuStat is what /proc/stat says of all cores: jiffies busy and in all,
// jiffies the hypervisor took them away (steal), and how many processes
// are runnable now.
type cpuStat struct {
	busy, total, steal uint64
	running            int
}

func readCPUStat() (cpuStat, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuStat{}, false
	}
	return parseCPUStat(b)
}

// parseCPUStat reads /proc/stat's "cpu" line (user nice system idle iowait
// irq softirq steal …) and its procs_running line.
func parseCPUStat(b []byte) (cpuStat, bool) {
	var st cpuStat
	sawCPU := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "cpu":
			if len(f) < 5 {
				return cpuStat{}, false
			}
			for i, x := range f[1:min(len(f), 9)] { // guest time is in user already
				n, err := strconv.ParseUint(x, 10, 64)
				if err != nil {
					return cpuStat{}, false
				}
				st.total += n
				if i != 3 && i != 4 { // idle, iowait
					st.busy += n
				}
				if i == 7 {
					st.steal = n
				}
			}
			sawCPU = true
		case "procs_running":
			if len(f) == 2 {
				st.running, _ = strconv.Atoi(f[1])
			}
		}
	}
	return st, sawCPU
}

// loadAverage is /proc/loadavg's one-minute figure, 0 when unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	l, _ := strconv.ParseFloat(f[0], 64)
	return l
}
