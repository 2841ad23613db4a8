package main

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/rig"
	"github.com/sshrig/sshrig/stats"
)

// repeatFlags are sshrig run's flags for repeated runs (docs/nightly.md).
type repeatFlags struct {
	times   int
	dur     time.Duration
	seed    string
	maxRate float64
	link    string
	delay   string // --answer-delay
}

func (f *repeatFlags) register(fl *pflag.FlagSet) {
	fl.IntVar(&f.times, "repeat", 0, "run each selected case this many times, in an order drawn from --seed (docs/nightly.md)")
	fl.DurationVar(&f.dur, "for", 0, "repeat the selected cases until this much time has passed (with --repeat: whichever ends first)")
	fl.StringVar(&f.seed, "seed", "", "seed for everything a repeated run draws: order, each case run's seed (default: drawn and printed)")
	fl.StringVar(&f.link, "link", "", "slow-link faults on every case's cutter, drawn from each case run's seed: "+matrix.LinkSyntax)
	fl.StringVar(&f.delay, "answer-delay", "", "delay before the server answers each channel request, drawn from each case run's seed: "+matrix.AnswerDelaySyntax)
	fl.Float64Var(&f.maxRate, "max-failure-rate", 0, "with --repeat or --for: exit 1 only when some case's failure rate is above this proportion (0.05 = 5%); default: any failure")
}

// options turns the flags into the run's Repeat. Its parallelism is sized
// as any run's is (rig/sizing.go), not drawn. A run
// with slow-link faults (--link, or a case's link:) draws, so it runs as a
// repeated run of one round unless told otherwise; so does one with an
// answer delay (--answer-delay, a case's answer_delay:).
func (f *repeatFlags) options(cases []matrix.Case) (rig.Repeat, error) {
	var rp rig.Repeat
	if f.link != "" {
		l, err := matrix.ParseLink(f.link)
		if err != nil {
			return rp, usageError("--link: %v", err)
		}
		rp.Link = &l
	}
	if f.delay != "" {
		d, err := matrix.ParseAnswerDelay(f.delay)
		if err != nil {
			return rp, usageError("--answer-delay: %v", err)
		}
		rp.AnswerDelay = &d
	}
	linked := rp.Link != nil || rp.AnswerDelay != nil
	for _, c := range cases {
		linked = linked || c.Link != nil || c.AnswerDelay != nil
	}
	if linked && f.times == 0 && f.dur == 0 {
		f.times = 1
	}
	switch {
	case f.times < 0:
		return rp, usageError("--repeat must be at least 1, got %d", f.times)
	case f.dur < 0:
		return rp, usageError("--for must be positive, got %s", f.dur)
	case f.maxRate < 0 || f.maxRate >= 1:
		return rp, usageError("--max-failure-rate must be a proportion in [0, 1), got %g", f.maxRate)
	}
	on := f.times > 0 || f.dur > 0
	if !on {
		if f.seed != "" || f.maxRate != 0 {
			return rp, usageError("--seed and --max-failure-rate need --repeat or --for")
		}
		return rp, nil
	}
	rp.Times, rp.For, rp.MaxFailureRate = f.times, f.dur, f.maxRate
	if f.seed == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return rp, rigError(fmt.Errorf("draw a seed: %w", err))
		}
		// 53 bits: the seed survives a trip through JavaScript's numbers.
		rp.Seed = binary.LittleEndian.Uint64(b[:]) & (1<<53 - 1)
	} else {
		s, err := strconv.ParseUint(f.seed, 10, 64)
		if err != nil {
			return rp, usageError("--seed %q: not an unsigned decimal number", f.seed)
		}
		rp.Seed = s
	}
	return rp, nil
}

// header describes a repeated run before it starts.
func (f *repeatFlags) header(w io.Writer, rp rig.Repeat) {
	if !rp.On() {
		return
	}
	fmt.Fprintf(w, "sshrig: seed %d (run again with --seed %d)\n", rp.Seed, rp.Seed)
}

// writeResults prints the table and the summary line: one row per case run,
// or per case with its rates for a repeated run.
func writeResults(w io.Writer, rep *report.Report) {
	if rep.Repeat == nil {
		rep.WriteTable(w)
		rep.WriteTally(w)
		rep.WriteAmbiguities(w)
		fmt.Fprintln(w, rep.SummaryLine())
		return
	}
	rep.WriteRates(w)
	fmt.Fprintln(w, rep.RatesLine())
}

// failure is exit code 1, or nil: a run that is not repeated fails on any
// failed verdict, a repeated one when some case's failure rate is above
// --max-failure-rate (by default, any failure).
func (f *repeatFlags) failure(rep *report.Report) error { return failureExit(rep, f.maxRate) }

// failureExit is failure with the threshold given.
func failureExit(rep *report.Report, maxRate float64) error {
	if rep.Repeat == nil {
		if rep.Summary.Fail > 0 {
			return &exitError{code: exitFail, err: errors.New("")}
		}
		return nil
	}
	above := rep.FailsAbove(maxRate)
	if len(above) == 0 {
		return nil
	}
	var names []string
	for _, c := range above {
		names = append(names, c.ID+" "+stats.Percent(c.Failure.Rate))
	}
	msg := ""
	if maxRate > 0 {
		msg = fmt.Sprintf("failure rate above %s: %s", stats.Percent(maxRate), strings.Join(names, ", "))
	}
	return &exitError{code: exitFail, err: errors.New(msg)}
}

// parallelChanged reports whether --parallel was given.
func parallelChanged(cmd *cobra.Command) bool { return cmd.Flags().Changed("parallel") }
