package htmlreport

import (
	"fmt"
	"strings"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/rig"
)

// Lanes of a timeline, top to bottom.
var lanes = []string{"tool", "cutter", "server", "remote command", "probes"}

const (
	laneTool = iota
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
)

// timeline is one case run's drawing, in tenths of a millisecond from its
// first event. Spans are [lane, from, to, label, class, open] (open: the
// thing never completed, drawn open-ended); points are [lane, at, label,
// class]. Labels index page.Labels.
type timeline struct {
	End    int64     `json:"e"`
	Spans  [][6]int  `json:"s"`
	Points [][4]int  `json:"p"`
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

// page is what the template renders.
type page struct {
	Runs   []pageRun
	Cases  []string   // every case id, in first-seen order
	Rates  [][]rateTD // Rates[case][run]
	Lanes  []string
	Data   pageData
	Errors int // case runs that failed, over all runs
}

// pageData is the JSON the page's script draws timelines from.
type pageData struct {
	Labels []string `json:"labels"`
	Lanes  []string `json:"lanes"`
	// Timelines[run][caserun]
	Timelines [][]timeline `json:"timelines"`
}

type pageRun struct {
	Name, Tool, Target, Started, Summary, Seed, Verified string
	Cases                                                []pageCase
}

type pageCase struct {
	ID, Status string
	Rate       rateTD
	Runs       []pageCaseRun
}

type pageCaseRun struct {
	Index                                          int // into the run's timelines
	Name, Verdict, Expected, Reported, Truth, Corr string
	Moment, Cut, Draw                              string
	Violations                                     []string
	Reason                                         string
	Open                                           bool
}

type rateTD struct {
	Present      bool
	Status       string
	Runs, Judged int
	Fail         int
	Rate         string
	Interval     string
	Width        int // rate bar, in pixels of 60
}

func rateCell(c rig.CaseRate) rateTD {
	return rateTD{Present: true, Status: c.Status(), Runs: c.Runs, Judged: c.Judged(), Fail: c.Fail,
		Rate: pct(c.Failure.Rate), Interval: "[" + pct(c.Failure.Low) + ", " + pct(c.Failure.High) + "]",
		Width: int(c.Failure.Rate*60 + 0.5)}
}

func pct(p float64) string { return fmt.Sprintf("%.1f%%", 100*p) }

func build(runs []*Run) page {
	labels := &labelTab{idx: map[string]int{}}
	p := page{Lanes: lanes}
	caseIdx := map[string]int{}
	for ri, r := range runs {
		rep := r.Report
		rates := rep.Rates
		if rates == nil {
			rates = rig.Rates(rep.Cases)
		}
		pr := pageRun{Name: r.Name, Tool: rep.Tool, Target: rep.Target, Started: rep.Started.Format(time.RFC3339), Verified: r.Verified}
		if rep.Repeat != nil {
			pr.Summary, pr.Seed = rep.RatesLine(), fmt.Sprint(rep.Repeat.Seed)
		} else {
			pr.Summary = rep.SummaryLine()
		}
		byCase := map[string]int{}
		for _, c := range rates {
			if _, ok := caseIdx[c.ID]; !ok {
				caseIdx[c.ID] = len(p.Cases)
				p.Cases = append(p.Cases, c.ID)
				p.Rates = append(p.Rates, nil)
			}
			byCase[c.ID] = len(pr.Cases)
			pr.Cases = append(pr.Cases, pageCase{ID: c.ID, Status: c.Status(), Rate: rateCell(c)})
		}
		var tls []timeline
		for _, cr := range rep.Cases {
			tl := drawCase(cr, r.events[cr.CorrelationID], labels)
			pc := pageCaseRun{Index: len(tls), Name: cr.RunName(), Verdict: string(cr.Verdict), Corr: cr.CorrelationID,
				Expected: string(cr.Expected.Category) + "/" + string(cr.Expected.Retry), Reported: reported(cr),
				Truth: truth(cr), Moment: cr.Moment.String(), Cut: cr.Cut, Reason: cr.Reason, Open: cr.Verdict == rig.Fail}
			if cr.Draw != nil {
				pc.Draw = fmt.Sprintf("seed %d", cr.Draw.Seed)
				if cr.Draw.Link != nil {
					pc.Draw += ", " + cr.Draw.Link.String()
				}
				if cr.Draw.AnswerDelayMS > 0 {
					pc.Draw += fmt.Sprintf(", answer delay %.3fms", cr.Draw.AnswerDelayMS)
				}
			}
			for _, v := range cr.Violations {
				pc.Violations = append(pc.Violations, v.String())
			}
			if cr.Verdict == rig.Fail {
				p.Errors++
			}
			tls = append(tls, tl)
			i := byCase[cr.ID]
			pr.Cases[i].Runs = append(pr.Cases[i].Runs, pc)
		}
		p.Data.Timelines = append(p.Data.Timelines, tls)
		p.Runs = append(p.Runs, pr)
		_ = ri
	}
	for ci, id := range p.Cases {
		row := make([]rateTD, len(runs))
		for ri := range p.Runs {
			for _, c := range p.Runs[ri].Cases {
				if c.ID == id {
					row[ri] = c.Rate
				}
			}
		}
		p.Rates[ci] = row
	}
	p.Data.Labels, p.Data.Lanes = labels.list, lanes
	return p
}

func reported(cr rig.CaseReport) string {
	switch {
	case cr.Reported != nil:
		return string(cr.Reported.Category) + "/" + string(cr.Reported.Retry)
	case cr.ParseError != "":
		return "malformed: " + cr.ParseError
	}
	return "no result"
}

func truth(cr rig.CaseReport) string {
	if cr.Truth == nil {
		return "unknown"
	}
	s := string(cr.Truth.State)
	if cr.Truth.ExitCode != nil {
		s += fmt.Sprintf("(%d)", *cr.Truth.ExitCode)
	}
	return fmt.Sprintf("%s, %d start, %d complete", s, cr.Truth.Starts, cr.Truth.Completes)
}

// drawCase lays a case run's events out in lanes.
func drawCase(cr rig.CaseReport, evs []event, labels *labelTab) timeline {
	d := &drawer{tl: timeline{labels: labels}, cr: cr, dispatched: -1, returned: -1, procs: map[string]int{}}
	if len(evs) == 0 {
		return d.tl
	}
	d.t0 = evs[0].Time
	for _, e := range evs {
		t := int(e.Time.Sub(d.t0) / (100 * time.Microsecond))
		if !d.rigOrTool(e, t) {
			d.server(e, t)
		}
		d.tl.End = int64(t)
	}
	d.finish()
	return d.tl
}

// drawer holds what drawing one case run needs across its events.
type drawer struct {
	tl                   timeline
	cr                   rig.CaseReport
	t0                   time.Time
	dispatched, returned int            // when the tool was dispatched and returned, -1 if not seen
	procs                map[string]int // pid -> spawn time of a command not yet seen to exit
	cutDrawn             bool
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
		cls := clsGood
		label := "verdict: " + str(e, "verdict")
		if str(e, "verdict") != string(verdict.Pass) {
			cls = clsBad
		}
		if v, ok := e.Data["violations"].([]any); ok && len(v) > 0 {
			var rules []string
			for _, x := range v {
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
	if d.cr.Verdict == rig.Fail {
		cls = clsBad
	}
	d.span(laneTool, d.dispatched, returned, "tool: "+reported(d.cr), cls, open)
}
