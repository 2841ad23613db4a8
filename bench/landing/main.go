package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/engine"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK     = 0
	exitMissed = 1 // the barrier missed, or its two judgements disagreed
	exitUsage  = 2
	exitRig    = 3 // the benchmark could not run (or was interrupted)
)

type config struct {
	runs      int
	hogs      int
	calibrate int
	sweep     int
	json      bool
	moments   []fault.Moment
	trace     string // a file for every run's result, one JSON object a line
}

const usage = `usage: landing [-runs N] [-hogs N] [-calibrate N] [-sweep N] [-moments LIST] [-json]

Runs the rig's barrier cutter and two Toxiproxy toxics (reset_peer, timeout),
added after a calibrated delay, on the same workload at the same moments, in
this one process, and prints per moment how many cuts landed inside the
moment's window on the server's timeline. Progress goes to stderr.

`

func parse(args []string, stderr io.Writer) (config, error) {
	cfg := config{}
	fs := flag.NewFlagSet("landing", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.IntVar(&cfg.runs, "runs", 300, "measured runs per moment and injector")
	fs.IntVar(&cfg.hogs, "hogs", 0, "busy-looping child processes that load the CPU while the benchmark runs")
	fs.IntVar(&cfg.calibrate, "calibrate", 20, "calibration runs (the windows' positions, Toxiproxy's answer time)")
	fs.IntVar(&cfg.sweep, "sweep", 10, "runs per candidate delay when sweeping each toxic's delay; 0 aims at the windows' middles")
	fs.BoolVar(&cfg.json, "json", false, "print the report as JSON instead of a table")
	fs.StringVar(&cfg.trace, "trace", "", "write every run's result (calibration and sweep included) to this file, one JSON object a line")
	list := fs.String("moments", joinMoments(moments), "comma-separated moments to measure, from "+joinMoments(moments))
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	switch {
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case cfg.runs < 1:
		return cfg, fmt.Errorf("-runs %d: need at least 1", cfg.runs)
	case cfg.hogs < 0:
		return cfg, fmt.Errorf("-hogs %d: cannot be negative", cfg.hogs)
	case cfg.calibrate < 1:
		return cfg, fmt.Errorf("-calibrate %d: need at least 1 run to calibrate on", cfg.calibrate)
	case cfg.sweep < 0:
		return cfg, fmt.Errorf("-sweep %d: cannot be negative", cfg.sweep)
	}
	for _, name := range strings.Split(*list, ",") {
		m, err := fault.ParseMoment(strings.TrimSpace(name))
		if err != nil || !slices.Contains(moments, m) {
			return cfg, fmt.Errorf("-moments: %q is not one of %s", name, joinMoments(moments))
		}
		if !slices.Contains(cfg.moments, m) {
			cfg.moments = append(cfg.moments, m)
		}
	}
	return cfg, nil
}

func joinMoments(ms []fault.Moment) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = m.String()
	}
	return strings.Join(s, ",")
}

// run is the command: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "landing: %v\n", err)
		fmt.Fprint(stderr, "run 'landing -h' for usage\n")
		return exitUsage
	}
	rep, err := measure(ctx, cfg, &progress{w: stderr})
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted: %w", err)
		}
		fmt.Fprintf(stderr, "landing: %v\n", err)
		return exitRig
	}
	if cfg.json {
		err = rep.writeJSON(stdout)
	} else {
		err = rep.writeTable(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "landing: %v\n", err)
		return exitRig
	}
	if len(rep.Disagreements) > 0 || rep.barrierMissed() {
		fmt.Fprintln(stderr, "landing: the barrier missed a moment or its judgements disagreed")
		return exitMissed
	}
	return exitOK
}

// measure starts the hogs, the rig's engine and Toxiproxy, calibrates the
// time-based injectors and makes the measured runs.
func measure(ctx context.Context, cfg config, prog *progress) (rep *Report, err error) {
	start := time.Now()
	rep = &Report{Runs: cfg.runs, Hogs: cfg.hogs, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Toxiproxy: toxiproxyVersion(),
		LoadStart: loadavg(), Workload: workload, OutputBytes: outputBytes}
	var h *hogs
	if cfg.hogs > 0 {
		if h, err = startHogs(cfg.hogs); err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, h.Stop()) }()
		prog.printf("started %d hogs: pids %v", cfg.hogs, h.PIDs())
	}
	env, err := engine.Start(ctx, engine.Options{})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, env.Close()) }()
	toxi, err := startToxiproxy()
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, toxi.Close()) }()
	b := &bench{env: env, toxi: toxi}
	if cfg.trace != "" {
		f, err := os.Create(cfg.trace)
		if err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, f.Close()) }()
		b.trace = json.NewEncoder(f)
	}

	if rep.Calibration, err = calibrate(ctx, b, cfg.calibrate, cfg.sweep, cfg.moments, prog); err != nil {
		return nil, fmt.Errorf("calibration: %w", err)
	}
	measured := time.Now()
	b.phase = "measure"
	for _, m := range cfg.moments {
		mr := MomentReport{Moment: m, Tallies: map[Injector]*Tally{}, Delays: rep.Calibration.Delays[m]}
		var widths []time.Duration
		for _, inj := range injectors {
			mr.Tallies[inj] = &Tally{}
		}
		for i := range cfg.runs {
			for _, inj := range injectors {
				p := plan{moment: m, injector: inj}
				if inj != Barrier {
					p.toxic, p.toxicity, p.delay = string(inj), 1, mr.Delays[inj]
				}
				res, err := b.run(ctx, p)
				if err != nil {
					return nil, fmt.Errorf("%s at %s, run %d: %w", inj, m, i+1, err)
				}
				mr.Tallies[inj].add(res.Verdict)
				switch {
				case inj == Barrier && res.Landed != (res.Verdict == Hit):
					rep.Disagreements = append(rep.Disagreements, fmt.Sprintf("%s run %d: engine landed=%v (%s), timeline %s", m, i+1, res.Landed, res.NotLanded, res.Verdict))
				case inj != Barrier && res.Window.Width() > 0:
					widths = append(widths, res.Window.Width())
				}
			}
			prog.step("measuring "+m.String(), i+1, cfg.runs)
		}
		mr.WidthP50, mr.WidthP90 = quantile(widths, 0.5), quantile(widths, 0.9)
		rep.Moments = append(rep.Moments, mr)
	}
	rep.MeasureWall = time.Since(measured)
	rep.Wall = time.Since(start)
	rep.LoadEnd = loadavg()
	return rep, nil
}

// progress writes progress lines to stderr, at most one every two seconds
// per phase, and always the last of a phase.
type progress struct {
	w    io.Writer
	last time.Time
}

func (p *progress) step(phase string, i, n int) {
	if i < n && time.Since(p.last) < 2*time.Second {
		return
	}
	p.printf("%s: %d/%d", phase, i, n)
}

func (p *progress) printf(format string, args ...any) {
	p.last = time.Now()
	fmt.Fprintf(p.w, "landing: "+format+"\n", args...)
}
