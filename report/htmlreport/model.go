package htmlreport

import (
	"fmt"
	"html/template"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sshrig/sshrig/report"
)

// page is what the template renders.
type page struct {
	Runs     []pageRun
	Repeated bool // some run was repeated: cells carry failure rates
	Agents   bool // some case run had an agent under test: the legend explains its lane
	Counts   []countTile
	Grids    []grid
	Rules    []ruleRow
	Cases    []pageCase // failing first
	Filters  filters
	Data     pageData
}

// pageData is the JSON the page's script draws timelines from.
type pageData struct {
	Labels []string `json:"labels"`
	Lanes  []string `json:"lanes"`
	// AgentLane is the lane the script leaves out of a timeline without
	// an agent.
	AgentLane int      `json:"agentLane"`
	Tools     []string `json:"tools"` // per run, for the tool filter
	// Timelines[run][caserun]
	Timelines [][]timeline `json:"timelines"`
}

type pageRun struct {
	Index                                                int
	Name, Tool, Target, Started, Summary, Seed, Verified string
}

// Head names a run as its columns are headed: the tool, where it ran, and
// the seed that replays it.
func (r pageRun) Head() string {
	s := r.Tool + " · " + r.Target
	if r.Seed != "" {
		s += " · seed " + r.Seed
	}
	return s
}

type countTile struct {
	Verdict, Label string
	N              int
}

type filters struct {
	Verdicts, Rules, Moments, Cuts, Tools []string
}

// grid is the moment x cut picture of one disposition.
type grid struct {
	Disposition string
	Cuts        []string // column heads
	Rows        []gridRow
}

type gridRow struct {
	Moment string
	Cells  [][]chip // per cut, the cases there
}

// chip is one case in a grid cell: a segment per run, coloured by outcome
// (or by failure rate when the run was repeated).
type chip struct {
	CI    int
	ID    string
	Title string
	Segs  []seg
}

type seg struct {
	Class string
	Style template.CSS
}

type ruleRow struct {
	Rule         string
	CaseRuns     int
	Cases        int
	Moments      string
	Honest, Said string
	FirstCase    string // its first case run's case, a link to its timelines
}

// pageCase is one case over every run: its table row, its grid square and
// its section of timelines share CI, which the page's script ties them by.
type pageCase struct {
	CI                                          int // first-seen index
	ID, Alias, Moment, Cut, Disposition, Status string
	Why                                         string         // one sentence: the first violation's detail, or why it was skipped
	Cells                                       []rateCell     // per run
	Groups                                      []caseRunGroup // per run it ran in, its case runs failing first
	rank                                        int            // statusRank of Status
	worstRate                                   float64        // the highest failure rate over the runs
	order                                       int            // first seen, as the matrix orders cases
}

// rateCell is a case's outcome in one run.
type rateCell struct {
	Present bool
	Status  string // fail, flaky, inconclusive, conservative, pass, skipped
	Label   string
	Detail  string // runs, rate and interval, for a repeated run
	Title   string
	Style   template.CSS
	Width   int // failure rate bar, in pixels of 40
}

type caseRunGroup struct {
	Run  int
	Head string
	Runs []pageCaseRun
}

type pageCaseRun struct {
	Index                                          int // into the run's timelines
	Name, Verdict, Expected, Reported, Truth, Corr string
	Class, Label                                   string // the verdict as drawn: "pass (conservative)"
	Moment, Cut, Draw                              string
	Violations                                     []string
	// Hosts, for a case run on a fleet, is each host's verdict, one line
	// each (report.HostReport.Line).
	Hosts []pageHost
	// Upload, for a step case that cut an upload, is what the cut left on
	// the host (report.Upload.String).
	Upload string
	// Agent, for an agent under test, is what its timeline's lane does
	// not show: the counts, and the final answers shown beside it.
	Agent  *pageAgent
	Rules  string // "|assertion/rule|…|", for the filters
	Reason string
	Open   bool
}

// pageHost is one host of a case run on a fleet.
type pageHost struct{ Class, Line string }

// pageAgent is an agent's run beside its timeline: report.AgentReport's
// summary line and each final answer under its head.
type pageAgent struct {
	Summary string
	Answers []pageAnswer
}

type pageAnswer struct {
	Head, Text string
	None       bool // the process printed no final answer
}

func agentOf(a *report.AgentReport) *pageAgent {
	if a == nil {
		return nil
	}
	pa := &pageAgent{Summary: a.Summary()}
	for i, text := range a.Answers {
		pa.Answers = append(pa.Answers, pageAnswer{Head: a.AnswerHead(i + 1), Text: text, None: text == ""})
	}
	return pa
}

// statusRank orders statuses worst first.
var statusRank = map[string]int{"fail": 0, "flaky": 1, "inconclusive": 2, "conservative": 3, "pass": 4, "skipped": 5}

// statusLabel is how a status reads on the page.
func statusLabel(s string) string {
	if s == "conservative" {
		return "pass (conservative)"
	}
	return s
}

// verdictClass is a case run's verdict as the page colours it: a pass that
// claims less than could be known is a conservative pass.
func verdictClass(cr report.CaseReport) string {
	if cr.Verdict == report.Pass && cr.Grade == report.Conservative {
		return "conservative"
	}
	return string(cr.Verdict)
}

// rateColour colours a repeated case by its failure rate: from amber at a
// rare failure to red at every run failing.
func rateColour(rate float64) template.CSS {
	hue := 40 * (1 - rate)
	return template.CSS(fmt.Sprintf("background:hsl(%.0f,85%%,%.0f%%)", hue, 55-10*rate))
}

func pct(p float64) string { return fmt.Sprintf("%.1f%%", 100*p) }

// caseAcc gathers one case over every run.
type caseAcc struct {
	pc      *pageCase
	moment  int
	rates   map[int]report.CaseRate
	conserv map[int]int // conservative passes per run
}

// targetOf names where a run ran: its target, and the kernel network when
// the tool met the server there (docs/network.md), which changes what a
// blackhole does to it.
func targetOf(rep *report.Report) string {
	t := rep.Target
	if rep.Jump {
		t += " through a jump host"
	}
	if rep.Hosts > 1 {
		t += fmt.Sprintf(", a fleet of %d hosts", rep.Hosts)
	}
	if rep.Net == "kernel" {
		t += ", kernel network"
	}
	return t
}

func build(runs []*Run) page {
	labels := &labelTab{idx: map[string]int{}}
	p := page{Data: pageData{Lanes: lanes, AgentLane: laneAgent}}
	var accs []*caseAcc
	byID := map[string]*caseAcc{}
	counts := map[string]int{}
	type ruleAcc struct {
		row          *ruleRow
		cases        map[string]bool
		moments      []string
		honest, said []string
	}
	rules := map[string]*ruleAcc{}
	var ruleOrder []string
	tools, moments, cuts := set{}, set{}, set{}

	for ri, r := range runs {
		rep := r.Report
		rates := rep.Rates
		if rates == nil {
			rates = report.Rates(rep.Cases)
		}
		pr := pageRun{Index: ri, Name: r.Name, Tool: rep.Tool, Target: targetOf(rep), Started: rep.Started.Format(time.RFC3339), Verified: r.Verified}
		if rep.Repeat != nil {
			p.Repeated = true
			pr.Summary, pr.Seed = rep.RatesLine(), fmt.Sprint(rep.Repeat.Seed)
		} else {
			pr.Summary = rep.SummaryLine()
		}
		p.Runs = append(p.Runs, pr)
		p.Data.Tools = append(p.Data.Tools, rep.Tool)
		tools.add(rep.Tool)
		var tls []timeline
		for _, cr := range rep.Cases {
			a := byID[cr.ID]
			if a == nil {
				a = &caseAcc{pc: &pageCase{CI: len(accs), ID: cr.ID, Alias: cr.Alias, Moment: cr.Moment.String(), Cut: cr.Cut,
					Disposition: cr.Disposition, order: len(accs)}, moment: int(cr.Moment), rates: map[int]report.CaseRate{}, conserv: map[int]int{}}
				byID[cr.ID] = a
				accs = append(accs, a)
				moments.add(a.pc.Moment)
				cuts.add(cr.Cut)
			}
			pc := a.pc
			cls := verdictClass(cr)
			counts[cls]++
			if cls == "conservative" {
				a.conserv[ri]++
			}
			tl := drawCase(cr, r.events[cr.CorrelationID], labels)
			cv := pageCaseRun{Index: len(tls), Name: cr.RunName(), Verdict: string(cr.Verdict), Corr: cr.CorrelationID,
				Class: cls, Label: statusLabel(cls),
				Expected: string(cr.Expected.Category) + "/" + string(cr.Expected.Retry), Reported: reported(cr),
				Truth: truth(cr), Moment: cr.Moment.String(), Cut: cr.Cut, Reason: cr.Reason, Rules: "|"}
			if cr.Draw != nil {
				cv.Draw = fmt.Sprintf("seed %d", cr.Draw.Seed)
				if cr.Draw.Link != nil {
					cv.Draw += ", " + cr.Draw.Link.String()
				}
				if cr.Draw.AnswerDelayMS > 0 {
					cv.Draw += fmt.Sprintf(", answer delay %.3fms", cr.Draw.AnswerDelayMS)
				}
			}
			for _, h := range cr.Hosts {
				cv.Hosts = append(cv.Hosts, pageHost{Class: string(h.Verdict), Line: h.Line()})
			}
			if cr.Upload != nil {
				cv.Upload = cr.Upload.String()
			}
			cv.Agent = agentOf(cr.Agent)
			p.Agents = p.Agents || cv.Agent != nil
			for _, v := range cr.Violations {
				rule := v.Assertion + "/" + v.Rule
				cv.Violations = append(cv.Violations, v.String())
				cv.Rules += rule + "|"
				ra := rules[rule]
				if ra == nil {
					ra = &ruleAcc{row: &ruleRow{Rule: rule, FirstCase: cr.ID}, cases: map[string]bool{}}
					rules[rule] = ra
					ruleOrder = append(ruleOrder, rule)
				}
				ra.row.CaseRuns++
				ra.cases[cr.ID] = true
				ra.moments = appendNew(ra.moments, cr.Moment.String())
				ra.honest = appendNew(ra.honest, cv.Expected)
				ra.said = appendNew(ra.said, cv.Reported)
			}
			if pc.Why == "" && cr.Verdict == report.Fail && len(cr.Violations) > 0 {
				pc.Why = cr.Violations[0].Detail
			}
			if len(pc.Groups) == 0 || pc.Groups[len(pc.Groups)-1].Run != ri {
				pc.Groups = append(pc.Groups, caseRunGroup{Run: ri, Head: pr.Head()})
			}
			g := &pc.Groups[len(pc.Groups)-1]
			g.Runs = append(g.Runs, cv)
			tls = append(tls, tl)
		}
		for _, c := range rates {
			if a := byID[c.ID]; a != nil {
				a.rates[ri] = c
			}
		}
		p.Data.Timelines = append(p.Data.Timelines, tls)
	}

	for _, a := range accs {
		pc := a.pc
		pc.rank = len(statusRank)
		for ri, r := range runs {
			c, ok := a.rates[ri]
			if !ok {
				pc.Cells = append(pc.Cells, rateCell{})
				continue
			}
			cell := makeCell(pc.ID, p.Runs[ri], c, a.conserv[ri], r.Report.Repeat != nil)
			pc.Cells = append(pc.Cells, cell)
			if rk := statusRank[cell.Status]; rk < pc.rank {
				pc.rank, pc.Status = rk, cell.Status
			}
			if c.Judged() > 0 && c.Failure.Rate > pc.worstRate {
				pc.worstRate = c.Failure.Rate
			}
		}
		if pc.Why == "" && pc.Status != "pass" && pc.Status != "conservative" {
			for _, g := range pc.Groups {
				for _, cv := range g.Runs {
					if pc.Why == "" && cv.Reason != "" {
						pc.Why = cv.Reason
					}
				}
			}
		}
		// Within a case, its failing runs first, and they are open.
		for gi := range pc.Groups {
			g := &pc.Groups[gi]
			sort.SliceStable(g.Runs, func(i, j int) bool { return statusRank[g.Runs[i].Class] < statusRank[g.Runs[j].Class] })
			for i := range g.Runs {
				g.Runs[i].Open = g.Runs[i].Class == "fail" || (i == 0 && pc.rank > statusRank["fail"])
			}
		}
		p.Cases = append(p.Cases, *pc)
	}
	p.Grids = grids(accs, p.Cases)
	sort.SliceStable(p.Cases, func(i, j int) bool {
		a, b := p.Cases[i], p.Cases[j]
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		if a.worstRate != b.worstRate {
			return a.worstRate > b.worstRate
		}
		return a.order < b.order
	})

	for _, v := range []string{"fail", "inconclusive", "conservative", "pass", "skipped"} {
		p.Counts = append(p.Counts, countTile{Verdict: v, Label: statusLabel(v), N: counts[v]})
		p.Filters.Verdicts = append(p.Filters.Verdicts, v)
	}
	for _, rule := range ruleOrder {
		ra := rules[rule]
		ra.row.Cases, ra.row.Moments = len(ra.cases), strings.Join(ra.moments, ", ")
		ra.row.Honest, ra.row.Said = strings.Join(ra.honest, ", "), strings.Join(ra.said, ", ")
		p.Rules = append(p.Rules, *ra.row)
	}
	sort.SliceStable(p.Rules, func(i, j int) bool { return p.Rules[i].CaseRuns > p.Rules[j].CaseRuns })
	for _, r := range p.Rules {
		p.Filters.Rules = append(p.Filters.Rules, r.Rule)
	}
	p.Filters.Moments = momentOrder(accs)
	p.Filters.Cuts = cutOrder(cuts)
	p.Filters.Tools = tools.list
	p.Data.Labels = labels.list
	return p
}

// makeCell is a case's outcome in one run, as a table cell and a tooltip.
func makeCell(id string, pr pageRun, c report.CaseRate, conservative int, repeated bool) rateCell {
	status := c.Status()
	if status == "pass" && conservative > 0 {
		status = "conservative"
	}
	cell := rateCell{Present: true, Status: status, Label: statusLabel(status)}
	title := id + " in " + pr.Head() + ": " + statusLabel(status)
	if repeated {
		cell.Width = int(c.Failure.Rate*40 + 0.5)
		if c.Judged() > 0 {
			cell.Detail = fmt.Sprintf("%d/%d failed, %s [%s, %s]", c.Fail, c.Judged(), pct(c.Failure.Rate), pct(c.Failure.Low), pct(c.Failure.High))
			title += fmt.Sprintf("; %d of %d judged runs failed: failure rate %s, 95%% Wilson interval %s to %s (with %d runs the true rate lies there with 95%% confidence)",
				c.Fail, c.Judged(), pct(c.Failure.Rate), pct(c.Failure.Low), pct(c.Failure.High), c.Judged())
		} else {
			cell.Detail = fmt.Sprintf("%d runs, none judged", c.Runs)
		}
		if c.Inconclusive > 0 {
			title += fmt.Sprintf("; %d inconclusive", c.Inconclusive)
		}
		if c.Fail > 0 {
			cell.Style = rateColour(c.Failure.Rate)
		}
	}
	if conservative > 0 {
		title += fmt.Sprintf("; %d conservative pass(es): safe, but claimed less than could be known", conservative)
	}
	cell.Title = title
	return cell
}

// grids lays the cases out as moment x cut per disposition, in the
// matrix's order of moments and cuts.
func grids(accs []*caseAcc, cases []pageCase) []grid {
	var out []grid
	var disps []string
	for _, a := range accs {
		disps = appendNew(disps, a.pc.Disposition)
	}
	for _, d := range disps {
		g := grid{Disposition: d}
		cs := set{}
		for _, a := range accs {
			if a.pc.Disposition == d {
				cs.add(a.pc.Cut)
			}
		}
		cutCols := cutOrder(cs)
		for _, c := range cutCols {
			g.Cuts = append(g.Cuts, cutHead(c))
		}
		for _, m := range momentOrder(accs) {
			row := gridRow{Moment: m, Cells: make([][]chip, len(cutCols))}
			any := false
			for _, a := range accs {
				if a.pc.Disposition != d || a.pc.Moment != m {
					continue
				}
				pc := cases[a.pc.CI]
				ch := chip{CI: pc.CI, ID: pc.ID}
				var titles []string
				for _, cell := range pc.Cells {
					if !cell.Present {
						ch.Segs = append(ch.Segs, seg{Class: "absent"})
						continue
					}
					ch.Segs = append(ch.Segs, seg{Class: cell.Status, Style: cell.Style})
					t := cell.Title
					if cell.Detail != "" && !strings.Contains(t, "Wilson") {
						t += " (" + cell.Detail + ")"
					}
					titles = append(titles, t)
				}
				ch.Title = strings.Join(titles, "\n")
				i := slices.Index(cutCols, a.pc.Cut)
				row.Cells[i] = append(row.Cells[i], ch)
				any = true
			}
			if any {
				g.Rows = append(g.Rows, row)
			}
		}
		out = append(out, g)
	}
	return out
}

func cutHead(c string) string {
	if c == "" {
		return "no cut"
	}
	return c
}

// knownCuts are the connection cuts in the matrix's order; other cuts
// follow, and "no cut" comes last.
var knownCuts = []string{"reset", "close", "blackhole", "kill-helper"}

func cutOrder(cs set) []string {
	var out []string
	for _, c := range knownCuts {
		if cs.has[c] {
			out = append(out, c)
		}
	}
	var rest []string
	for _, c := range cs.list {
		if c != "" && !slices.Contains(knownCuts, c) {
			rest = append(rest, c)
		}
	}
	sort.Strings(rest)
	out = append(out, rest...)
	if cs.has[""] {
		out = append(out, "")
	}
	return out
}

// momentOrder lists the cases' moments in the order of the exchange.
func momentOrder(accs []*caseAcc) []string {
	type mo struct {
		n    int
		name string
	}
	var ms []mo
	seen := map[string]bool{}
	for _, a := range accs {
		if !seen[a.pc.Moment] {
			seen[a.pc.Moment] = true
			ms = append(ms, mo{a.moment, a.pc.Moment})
		}
	}
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].n < ms[j].n })
	var out []string
	for _, m := range ms {
		out = append(out, m.name)
	}
	return out
}

// set is a list of strings without repeats, in first-added order.
type set struct {
	has  map[string]bool
	list []string
}

func (s *set) add(v string) {
	if s.has == nil {
		s.has = map[string]bool{}
	}
	if !s.has[v] {
		s.has[v] = true
		s.list = append(s.list, v)
	}
}

func appendNew(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

func reported(cr report.CaseReport) string {
	switch {
	case cr.Reported != nil:
		return string(cr.Reported.Category) + "/" + string(cr.Reported.Retry)
	case cr.ParseError != "":
		return "malformed: " + cr.ParseError
	}
	return "no result"
}

func truth(cr report.CaseReport) string {
	if cr.Truth == nil {
		return "unknown"
	}
	s := string(cr.Truth.State)
	if cr.Truth.ExitCode != nil {
		s += fmt.Sprintf("(%d)", *cr.Truth.ExitCode)
	}
	return fmt.Sprintf("%s, %d start, %d complete", s, cr.Truth.Starts, cr.Truth.Completes)
}
