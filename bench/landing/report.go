package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"text/tabwriter"
	"time"

	"github.com/sshrig/sshrig/fault"
)

// Report is the benchmark's result.
type Report struct {
	Runs        int    `json:"runs"` // measured runs per moment and injector
	Hogs        int    `json:"hogs"`
	CPUs        int    `json:"cpus"`
	GoVersion   string `json:"go_version"`
	Toxiproxy   string `json:"toxiproxy"` // the module's version`
	Workload    string `json:"workload"`
	OutputBytes int64  `json:"output_bytes"`
	// LoadStart and LoadEnd are /proc/loadavg's 1, 5 and 15 minute load
	// averages before the hogs started and after the last run.
	LoadStart   string         `json:"loadavg_start"`
	LoadEnd     string         `json:"loadavg_end"`
	Wall        time.Duration  `json:"wall_ns"`         // everything, calibration included
	MeasureWall time.Duration  `json:"measure_wall_ns"` // the measured runs
	Calibration *Calibration   `json:"calibration"`
	Moments     []MomentReport `json:"moments"`
	// Disagreements are barrier runs where the engine's landing judgement
	// and the timeline rule differ.
	Disagreements []string `json:"disagreements"`
}

// MomentReport is one moment's result.
type MomentReport struct {
	Moment  fault.Moment               `json:"moment"`
	Tallies map[Injector]*Tally        `json:"injectors"`
	Delays  map[Injector]time.Duration `json:"delays_ns"`
	// WidthP50 and WidthP90 are the window's width in the time-based runs
	// (where nothing holds the server).
	WidthP50 time.Duration `json:"width_p50_ns"`
	WidthP90 time.Duration `json:"width_p90_ns"`
}

// Tally counts one injector's verdicts at one moment.
type Tally struct {
	Runs        int `json:"runs"`
	Hits        int `json:"hits"`
	Early       int `json:"early"`
	Late        int `json:"late"`
	Unconfirmed int `json:"unconfirmed"`
}

func (t *Tally) add(v Verdict) {
	t.Runs++
	switch v {
	case Hit:
		t.Hits++
	case Early:
		t.Early++
	case Late:
		t.Late++
	case Unconfirmed:
		t.Unconfirmed++
	}
}

func (r *Report) barrierMissed() bool {
	for _, m := range r.Moments {
		if t := m.Tallies[Barrier]; t.Hits != t.Runs {
			return true
		}
	}
	return false
}

func (r *Report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// toxiproxyVersion is the version of the Toxiproxy module built in.
func toxiproxyVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/Shopify/toxiproxy/v2" {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

func (r *Report) writeTable(w io.Writer) error {
	fmt.Fprintf(w, "landing: %d runs per moment and injector, %d hogs, %d CPUs, %s, Toxiproxy %s\n", r.Runs, r.Hogs, r.CPUs, r.GoVersion, r.Toxiproxy)
	fmt.Fprintf(w, "load average (1, 5, 15 min): %s before, %s after; wall %s (measured runs %s)\n",
		r.LoadStart, r.LoadEnd, r.Wall.Round(time.Second), r.MeasureWall.Round(time.Second))
	c := r.Calibration
	sweep := "no sweep: delays aim at the windows' middles"
	if c.SweepRuns > 0 {
		sweep = fmt.Sprintf("delays swept, %d runs per candidate", c.SweepRuns)
	}
	fmt.Fprintf(w, "calibration: %d runs; Toxiproxy answers a toxic in %s (reset_peer), %s (timeout), median; %s\n\n",
		c.Runs, ms(c.APIRTT[ResetPeer]), ms(c.APIRTT[Timeout]), sweep)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "moment\tbarrier\treset_peer\ttimeout\twidth p50\twidth p90\tdelay reset_peer\tdelay timeout\t")
	for _, m := range r.Moments {
		t := m.Tallies
		fmt.Fprintf(tw, "%s\t%d/%d\t%d/%d\t%d/%d\t%s\t%s\t%s\t%s\t\n", m.Moment,
			t[Barrier].Hits, t[Barrier].Runs, t[ResetPeer].Hits, t[ResetPeer].Runs, t[Timeout].Hits, t[Timeout].Runs,
			ms(m.WidthP50), ms(m.WidthP90), ms(m.Delays[ResetPeer]), ms(m.Delays[Timeout]))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nmisses (early / late / unconfirmed):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "moment\tbarrier\treset_peer\ttimeout\t")
	for _, m := range r.Moments {
		fmt.Fprintf(tw, "%s", m.Moment)
		for _, inj := range injectors {
			t := m.Tallies[inj]
			fmt.Fprintf(tw, "\t%d / %d / %d", t.Early, t.Late, t.Unconfirmed)
		}
		fmt.Fprintln(tw, "\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nbarrier judgements that disagree with the timeline: %d\n", len(r.Disagreements))
	for _, d := range r.Disagreements {
		fmt.Fprintf(w, "  %s\n", d)
	}
	return nil
}
