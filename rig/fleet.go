package rig

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/internal/evidence"
	"github.com/sshrig/sshrig/internal/secret"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/markers"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// A case run on a fleet (Options.Hosts) is one operation on N hosts, each a
// case of the server's own (its own host, cutter and id), under one
// invocation of the tool: the tool gets every host (tool.Target.Hosts,
// SSHRIG_HOSTS) and one command, wrapped per host (markers.WrapPerHost), and
// reports each host in its result's hosts. The case's cut kills one host (or
// CutHosts of them) at its moment; the others run without a fault. Each host
// is judged as a case of its own, its report against its own truth, and the
// case's verdict is the worst of its hosts'.

// fleetHost is one host of a case run on a fleet.
type fleetHost struct {
	id  string // the host's case id: its markers' and the server's
	cut bool   // the case's cut kills this host
	er  *engine.Run
	ev  *engine.Evidence
	evs evidence.Case
	in  verdict.Input
	err error // Finish's
}

// addr is the host as the tool is given it.
func (h *fleetHost) addr() string { return h.er.Addr() }

// missedOnTiming reports whether every host whose cut did not land missed
// it for a reason that rests on the machine's schedule
// (engine.Evidence.MissedOnTiming), and one did: the case then stands to be
// confirmed alone, as a one-host case does.
func (f fleetRuns) missedOnTiming() bool {
	missed := false
	for _, h := range f {
		if h.ev == nil || h.ev.Landed {
			continue
		}
		if !h.ev.MissedOnTiming {
			return false
		}
		missed = true
	}
	return missed
}

// fleetHostID is the id of host k (1-based) of case run id.
func fleetHostID(id string, k int) string { return fmt.Sprintf("%s-h%d", id, k) }

// cutHosts says which of n hosts a case that cuts k of them cuts: every
// other one from the second on, so that the cut host is neither always the
// first nor always the last a tool reaches.
func cutHosts(n, k int) []bool {
	cut := make([]bool, n)
	for i := 1; i < n && k > 0; i += 2 {
		cut[i], k = true, k-1
	}
	for i := 0; i < n && k > 0; i += 2 {
		cut[i], k = true, k-1
	}
	return cut
}

// hostCase is case c as host h of its fleet runs it: the case's cut on a
// cut host, none on the others.
func hostCase(c matrix.Case, cut bool) matrix.Case {
	if !cut && c.Moment != fault.None {
		c.Moment, c.Cut, c.Disposition = fault.None, 0, fault.Survive
	}
	return c
}

// fleetRuns are a fleet's engine runs as the tool's invocation sees them:
// one tool for all of them.
type fleetRuns []*fleetHost

func (f fleetRuns) ToolReturned() {
	for _, h := range f {
		h.er.ToolReturned()
	}
}

func (f fleetRuns) SetToolPID(pid int) {
	for _, h := range f {
		h.er.SetToolPID(pid)
	}
}

// executeFleet is execute for a case run on a fleet.
func (r *runner) executeFleet(ctx context.Context, run *caseRun) (release func()) {
	c, id := run.c, run.id
	release = func() {}
	cut := cutHosts(r.o.Hosts, max(c.CutHosts, 1))
	hosts := make(fleetRuns, 0, r.o.Hosts)
	finish := func() {
		var wg sync.WaitGroup
		for _, h := range hosts {
			if h.ev == nil {
				wg.Go(func() { h.ev, h.err = h.er.Finish(ctx, r.o.Settle) })
			}
		}
		wg.Wait()
	}
	broken := func(why string) func() {
		finish()
		run.broken = why + r.serverGone(ctx)
		return release
	}
	for k := range r.o.Hosts {
		spec := r.caseSpec(hostCase(c, cut[k]), fleetHostID(id, k+1))
		er, err := r.env.Begin(ctx, spec)
		if err != nil {
			return broken(fmt.Sprintf("could not set host %d of %d up: %v", k+1, r.o.Hosts, err))
		}
		hosts = append(hosts, &fleetHost{id: spec.ID, cut: cut[k], er: er})
	}
	t, knownHosts, err := r.fleetTarget(hosts, c, id)
	if knownHosts != "" {
		defer os.Remove(knownHosts)
	}
	if err != nil {
		return broken("could not prepare the fleet's target: " + err.Error())
	}
	run.t = t
	r.logRequest(c, run.t)
	tr, toolDone := r.invoke(ctx, hosts, run.t)
	run.tr = tr
	r.logReturned(id, tr)
	if tr.exit != nil && tr.exit.StartErr != "" {
		return broken("could not start the tool: " + tr.exit.StartErr)
	}
	finish()
	waitTool(run, toolDone)
	var errs []error
	for _, h := range hosts {
		if h.ev == nil {
			errs = append(errs, fmt.Errorf("host %s: %w", h.addr(), h.err))
		}
	}
	if len(errs) > 0 {
		run.broken = "could not finish the case: " + errors.Join(errs...).Error()
		return release
	}
	// The first cut host stands for the case where one host's account is
	// kept (the transcript, the event log's evidence, the case's truth).
	primary := hosts[0]
	for _, h := range hosts {
		if h.cut {
			primary = h
			break
		}
	}
	run.ev = primary.ev
	if primary.ev.Cut != nil && primary.ev.Cut.NoHelper {
		run.skip = noHelperSkip
		return release
	}
	run.secrets, release = r.caseSecrets(run.t)
	read, native := r.readResult(run)
	run.native = native
	r.logEvidence(c, id, primary.ev, read)
	for _, h := range hosts {
		h.evs = evidence.Of(h.ev.Events, h.id)
		h.in = r.verdictInput(hostCase(c, h.cut), run.t, tr, h.ev, h.evs, run.secrets)
		hr := hostReading(read, h.addr())
		h.in.Read = &hr
		h.in.NoEcho = r.o.Reading != nil
	}
	run.evs, run.in, run.hosts, run.topResult = primary.evs, primary.in, hosts, read.Result
	return release
}

// fleetTarget is the tool's target for a fleet: the first host's target
// as any case's (rig/run.go, target), with every host's address, one
// known_hosts file naming them all (written here; the caller removes it),
// the fleet's correlation id, and one command whose markers take each
// host's id. Step sequences and reconcile probes name one id: a fleet makes
// neither.
func (r *runner) fleetTarget(hosts fleetRuns, c matrix.Case, id string) (tool.Target, string, error) {
	t, err := r.target(hosts[0].er, c)
	if err != nil {
		return tool.Target{}, "", err
	}
	if t.Command, err = markers.WrapPerHost(r.env.Ready().Ledger, c.Workload(id)); err != nil {
		return tool.Target{}, "", err
	}
	t.CorrelationID, t.Lookup, t.FollowUp, t.Reconcile = id, "", "", ""
	f, err := os.CreateTemp("", "sshrig-fleet-known_hosts-")
	if err != nil {
		return tool.Target{}, "", err
	}
	defer f.Close()
	for _, h := range hosts {
		b, err := os.ReadFile(h.er.KnownHosts())
		if err != nil {
			return tool.Target{}, f.Name(), err
		}
		if _, err := f.Write(b); err != nil {
			return tool.Target{}, f.Name(), err
		}
		t.Hosts = append(t.Hosts, h.addr())
	}
	t.KnownHosts = f.Name()
	return t, f.Name(), nil
}

// hostReading is what the tool's result says of one host: its entry in
// hosts, as a result of its own; the whole result when it has no hosts (a
// tool that speaks of the operation as one: what it says, it says of every
// host); an error when hosts leaves the host out.
func hostReading(read verdict.Reading, host string) verdict.Reading {
	if read.Err != nil || read.Result == nil || len(read.Result.Hosts) == 0 {
		return read
	}
	top := read.Result
	h, ok := top.Host(host)
	if !ok {
		return verdict.Reading{Err: fmt.Errorf("%w: the result's hosts has no entry for %s (it names %s)", errNoHostEntry, host, hostNames(top.Hosts))}
	}
	return verdict.Reading{Result: &result.Result{OK: h.OK, Category: h.Category, Operation: top.Operation, Retry: h.Retry,
		CorrelationID: top.CorrelationID, Message: h.Message}}
}

var errNoHostEntry = errors.New("no result for the host")

func hostNames(hs []result.HostResult) string {
	var names []string
	for _, h := range hs {
		names = append(names, h.Host)
	}
	return strings.Join(names, ", ")
}

// decideFleet is decide for a case run on a fleet: each host judged as a
// case of its own, the case's verdict the worst of its hosts', every
// violation naming its host.
func decideFleet(run *caseRun) decision {
	d := decision{Violations: []report.Violation{}, Reason: run.note}
	secrets := run.secrets
	rank := map[report.Verdict]int{report.Pass: 0, report.Skipped: 0, report.Inconclusive: 1, report.Fail: 2}
	d.Verdict = report.Pass
	for _, h := range run.hosts {
		v := verdict.Judge(h.in)
		v = withViolations(v, crossCase(h.evs, hostCase(run.c, h.cut), v.Reported))
		hr := report.HostReport{Host: h.addr(), ID: h.id, Cut: h.cut, Verdict: v.Status, Grade: v.Grade,
			Expected: matrix.Expected{Category: v.Expected.Category, Retry: v.Expected.Retry},
			Truth:    truthReport(h.ev.Truth, h.ev.ProbeErr == ""), Reason: string(secret.Redact([]byte(v.Reason), secrets)),
			Violations: []report.Violation{}}
		if rep := redactResult(v.Reported, secrets); rep != nil {
			hr.Reported = &result.HostResult{Host: h.addr(), OK: rep.OK, Category: rep.Category, Retry: rep.Retry, Message: rep.Message}
		}
		for _, x := range v.Violations {
			detail := string(secret.Redact([]byte(x.Detail), secrets))
			hr.Violations = append(hr.Violations, report.Violation{Assertion: x.Assertion, Rule: x.Rule, Detail: detail})
			d.Violations = append(d.Violations, report.Violation{Assertion: x.Assertion, Rule: x.Rule, Detail: "host " + h.addr() + ": " + detail})
		}
		if h.cut || d.Expected == (matrix.Expected{}) {
			d.Expected, d.Grade, d.Steps = hr.Expected, v.Grade, v.Path
		}
		if rank[v.Status] > rank[d.Verdict] {
			d.Verdict = v.Status
			if v.Reason != "" {
				d.Reason = "host " + h.addr() + ": " + hr.Reason
			}
		}
		if v.ParseError != "" && d.ParseError == "" {
			d.ParseError = string(secret.Redact([]byte(v.ParseError), secrets))
		}
		d.Hosts = append(d.Hosts, hr)
	}
	if d.Verdict != report.Pass {
		d.Grade = ""
	}
	// The tool's own words, with every host's entry.
	d.Reported = redactResult(run.topResult, secrets)
	return d
}

// ErrFleetMismatch is returned for a run whose cases and fleet do not fit.
var ErrFleetMismatch = errors.New("rig: cases and fleet do not fit")

// CheckFleet checks that cases fit a run on a fleet of hosts hosts (0 or 1:
// none), with or without a jump host: a fleet has 2 to matrix.MaxHosts
// hosts, leaves a host uncut, and is not behind a jump host; a case cuts
// several hosts only on a fleet.
func CheckFleet(cases []matrix.Case, hosts int, jump bool) error {
	switch {
	case hosts < 0 || hosts == 1 || hosts > matrix.MaxHosts:
		return fmt.Errorf("%w: %d hosts: a fleet has 2 to %d", ErrFleetMismatch, hosts, matrix.MaxHosts)
	case hosts > 1 && jump:
		return fmt.Errorf("%w: a fleet behind a jump host is not made: give --hosts or --jump, not both", ErrFleetMismatch)
	}
	for _, c := range cases {
		switch {
		case hosts == 0 && c.CutHosts > 0:
			return fmt.Errorf("%w: case %s: cut_hosts: %d needs a fleet: run with --hosts N", ErrFleetMismatch, c.ID, c.CutHosts)
		case hosts > 1 && c.CutHosts >= hosts:
			return fmt.Errorf("%w: case %s: cut_hosts: %d of %d hosts leaves none uncut: run with more --hosts", ErrFleetMismatch, c.ID, c.CutHosts, hosts)
		}
	}
	return nil
}

// CheckFleetTool refuses a fleet run of a tool that runs on one host only
// (tool.OneHost): every case would stop at its preflight, its result
// holding no hosts.
func CheckFleetTool(t tool.Tool, hosts int) error {
	if _, ok := t.(tool.OneHost); ok && hosts > 1 {
		return fmt.Errorf("rig: --hosts %d: %s runs on one host, and its result has no hosts: a fleet run needs a tool that takes SSHRIG_HOSTS (the reference, or your own)", hosts, t.Name())
	}
	return nil
}
