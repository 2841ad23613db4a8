package htmlreport

import (
	"fmt"
	"strings"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
)

// Lanes of a timeline, top to bottom. The agent's lane is drawn only for
// a case with an agent under test (timeline.Agent).
var lanes = []string{"tool", "agent", "cutter", "server", "remote command", "probes"}

const (
	laneTool = iota
	laneAgent
	laneCutter
	laneServer
	laneRemote
	laneProbes
)

// Mark classes, for colour.
const (
	clsPlain = iota
	clsCut
	clsMarker
	clsBad
	clsGood
	clsRefused // a call the rig ran nothing for: drawn hollow
)

// timeline is one case run's drawing, in tenths of a millisecond from its
// first instant (firstInstant). Spans are [lane, from, to, label, class, open] (open: the
// thing never completed, drawn open-ended); points are [lane, at, label,
// class]. Labels index page.Labels. Agent says the case had an agent under
// test, so its lane is drawn even when the agent called nothing.
type timeline struct {
	End    int64     `json:"e"`
	Spans  [][6]int  `json:"s"`
	Points [][4]int  `json:"p"`
	Agent  bool      `json:"a,omitempty"`
	labels *labelTab `json:"-"`
}

type labelTab struct {
	idx  map[string]int
	list []string
}

func (l *labelTab) id(s string) int {
	if i, ok := l.idx[s]; ok {
		return i
	}
	l.idx[s] = len(l.list)
	l.list = append(l.list, s)
	return len(l.list) - 1
}

// drawCase lays a case run's events out in lanes.
func drawCase(cr report.CaseReport, evs []event, labels *labelTab) timeline {
	d := &drawer{tl: timeline{labels: labels, Agent: cr.Agent != nil}, cr: cr, dispatched: -1, returned: -1, procs: map[string]int{}}
	if len(evs) == 0 && (cr.Agent == nil || len(cr.Agent.Calls) == 0) {
		return d.tl
	}
	d.t0 = firstInstant(cr, evs)
	for i, e := range evs {
		if e.Source == "rig" && e.Event == "verdict" {
			d.finalVerdict = i
		}
	}
	for i, e := range evs {
		d.at = i
		t := d.tenths(e.Time)
		if !d.rigOrTool(e, t) {
			d.server(e, t)
		}
		d.tl.End = int64(t)
	}
	d.finish()
	d.agent()
	return d.tl
}

// firstInstant is where a case run's time axis starts: its first event, or
// its agent's first call if that came before (the calls are the agent's
// own account, logged after it returned).
func firstInstant(cr report.CaseReport, evs []event) time.Time {
	var t0 time.Time
	if len(evs) > 0 {
		t0 = evs[0].Time
	}
	if cr.Agent != nil && len(cr.Agent.Calls) > 0 {
		if first := cr.Agent.Calls[0].Start; t0.IsZero() || first.Before(t0) {
			t0 = first
		}
	}
	return t0
}

// tenths is an instant on the time axis.
func (d *drawer) tenths(at time.Time) int { return int(at.Sub(d.t0) / (100 * time.Microsecond)) }

// drawer holds what drawing one case run needs across its events.
type drawer struct {
	tl                   timeline
	cr                   report.CaseReport
	t0                   time.Time
	dispatched, returned int            // when the tool was dispatched and returned, -1 if not seen
	procs                map[string]int // pid -> spawn time of a command not yet seen to exit
	cutDrawn             bool
	// at is the index of the event being drawn; finalVerdict that of the
	// case run's last verdict event, the decision the report carries (a
	// run-level amendment, a confirmation alone or an ambiguous report,
	// logs a later one): only that one is drawn.
	at, finalVerdict int
}

func (d *drawer) point(lane, t int, label string, cls int) {
	d.tl.Points = append(d.tl.Points, [4]int{lane, t, d.tl.labels.id(label), cls})
}

func (d *drawer) span(lane, from, to int, label string, cls int, open bool) {
	o := 0
	if open {
		o = 1
	}
	d.tl.Spans = append(d.tl.Spans, [6]int{lane, from, to, d.tl.labels.id(label), cls, o})
}

func str(e event, k string) string {
	if v, ok := e.Data[k]; ok {
		return fmt.Sprint(v)
	}
	return ""
}

// rigOrTool draws the rig's and the tool's events; false if e is neither.
func (d *drawer) rigOrTool(e event, t int) bool {
	switch e.Source + "/" + e.Event {
	case "rig/dispatch_started":
		d.dispatched = t
	case "tool/tool_returned":
		d.returned = t
		if str(e, "hung") == "true" {
			d.point(laneTool, t, "hung: given up on", clsBad)
		}
	case "rig/result":
		if pe := str(e, "parse_error"); pe != "" {
			d.point(laneTool, t, "result does not parse", clsBad)
		}
	case "rig/reconcile_probe":
		label := "probe: " + str(e, "state")
		if str(e, "agree") == "false" {
			label += " (sources disagree)"
		}
		d.point(laneProbes, t, label, clsPlain)
	case "rig/verdict":
		if d.at != d.finalVerdict {
			return true // superseded by the case run's later decision
		}
		cls := clsGood
		label := "verdict: " + str(e, "verdict")
		if str(e, "verdict") != string(report.Pass) {
			cls = clsBad
		} else if d.cr.Grade == report.Conservative {
			label += " (conservative)"
		}
		if v, ok := e.Data["violations"].([]any); ok && len(v) > 0 {
			var rules []string
			for _, x := range v {
				// {assertion, rule, detail}; a log before the verdict event
				// carried the report's violations held "assertion/rule".
				if m, ok := x.(map[string]any); ok {
					x = fmt.Sprint(m["assertion"]) + "/" + fmt.Sprint(m["rule"])
				}
				rules = append(rules, fmt.Sprint(x))
			}
			label += " (" + strings.Join(rules, ", ") + ")"
		}
		d.point(laneProbes, t, label, cls)
	default:
		return false
	}
	return true
}

// server draws the server's events: connections, moments, the command.
func (d *drawer) server(e event, t int) {
	switch e.Source + "/" + e.Event {
	case "server/conn_accepted":
		d.point(laneServer, t, "conn "+str(e, "conn"), clsPlain)
	case "server/moment":
		d.moment(str(e, "moment"), t)
	case "server/exec":
		d.point(laneServer, t, "exec request", clsPlain)
	case "server/exec_refused", "server/session_refused", "server/auth_rejected":
		d.point(laneServer, t, strings.ReplaceAll(e.Event, "_", " "), clsBad)
	case "server/exit_sent":
		d.point(laneServer, t, "exit status "+str(e, "exit_code")+str(e, "signal")+" sent", clsPlain)
	case "server/transport_lost":
		d.point(laneServer, t, "transport lost", clsPlain)
	case "server/server_fault":
		// The far side's fault (docs/server-faults.md): its detail says
		// what the server did, which the cut's own point does not.
		d.point(laneServer, t, "server fault: "+str(e, "detail"), clsCut)
	case "server/exit_withheld":
		d.point(laneServer, t, "exit status withheld: "+str(e, "detail"), clsCut)
	case "server/released":
		d.point(laneServer, t, "hold released", clsPlain)
	case "server/proc_spawned":
		d.procs[str(e, "pid")] = t
	case "server/proc_exited":
		pid := str(e, "pid")
		if from, ok := d.procs[pid]; ok {
			d.span(laneRemote, from, t, "command, exit "+str(e, "exit_code"), clsPlain, false)
			delete(d.procs, pid)
		}
	case "server/proc_killed":
		d.point(laneRemote, t, "killed", clsBad)
	}
}

func (d *drawer) moment(m string, t int) {
	if m == d.cr.Moment.String() && d.cr.Cut != "" && !d.cutDrawn {
		d.cutDrawn = true
		d.point(laneCutter, t, "cut: "+d.cr.Cut+" at "+m, clsCut)
	}
	switch m {
	case fault.Started.String():
		d.point(laneRemote, t, "start marker", clsMarker)
	case fault.Finished.String():
		d.point(laneRemote, t, "complete marker", clsMarker)
	default:
		d.point(laneServer, t, m, clsPlain)
	}
}

// finish draws what is still open when the events end: commands with no
// exit seen, a cut that never landed, the tool's call.
func (d *drawer) finish() {
	end := int(d.tl.End)
	for _, from := range d.procs {
		d.span(laneRemote, from, end, "command: no exit seen", clsPlain, true)
	}
	if d.cr.Cut != "" && !d.cutDrawn {
		d.point(laneCutter, end, "cut "+d.cr.Cut+" never landed at "+d.cr.Moment.String(), clsBad)
	}
	if d.dispatched < 0 {
		return
	}
	returned := d.returned
	if returned < 0 {
		returned = end
	}
	// An answer that cannot say what happened is indeterminate, as
	// Jepsen draws it: open-ended.
	open := d.cr.Reported != nil && d.cr.Reported.Category == result.OutcomeUnknown
	cls := clsGood
	if d.cr.Verdict == report.Fail {
		cls = clsBad
	}
	d.span(laneTool, d.dispatched, returned, "tool: "+reported(d.cr), cls, open)
}

// agent draws the agent's calls in their own lane, each from its start to
// its end and said as JUnit says it, and the moment the person refused.
// It draws after finish, which closes what is open at the events' end:
// calls that outlast the events widen the axis only.
func (d *drawer) agent() {
	a := d.cr.Agent
	if a == nil {
		return
	}
	for _, c := range a.Calls {
		cls := clsPlain
		switch {
		case c.Refused != "":
			cls = clsRefused
		case c.IsError:
			cls = clsBad
		}
		from, to := d.tenths(c.Start), d.tenths(c.End)
		d.span(laneAgent, from, to, a.CallLine(c), cls, false)
		d.tl.End = max(d.tl.End, int64(to))
	}
	if !a.DeniedAt.IsZero() {
		at := d.tenths(a.DeniedAt)
		label := report.RefusalWords
		if a.ConnectionsAfterDenial != nil {
			label += fmt.Sprintf(": %d connections after", *a.ConnectionsAfterDenial)
		}
		d.point(laneAgent, at, label, clsCut)
		d.tl.End = max(d.tl.End, int64(at))
	}
}
