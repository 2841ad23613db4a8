package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"

	"github.com/sshrig/sshrig/tool"
)

// JUnit XML as CI systems read it (the Ant schema as Maven Surefire extends
// it). A run that is not repeated has one testcase per case. A repeated run
// has one testcase per case too, whatever its runs, the way Surefire reports
// a test it reran: a case whose failure rate is within the run's
// --max-failure-rate passes with a <flakyFailure> per failing run; one
// above it fails with <failure> for its first failing run and a
// <rerunFailure> per later one. Its properties carry the counts and the
// rate with its interval.

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name       string          `xml:"name,attr"`
	Classname  string          `xml:"classname,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Failure    *junitMessage   `xml:"failure,omitempty"`
	Error      *junitMessage   `xml:"error,omitempty"`
	Skipped    *junitMessage   `xml:"skipped,omitempty"`
	Flaky      []junitRerun    `xml:"flakyFailure,omitempty"`
	Rerun      []junitRerun    `xml:"rerunFailure,omitempty"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

// junitRerun is Surefire's flakyFailure and rerunFailure: one failing run.
type junitRerun struct {
	Message    string `xml:"message,attr"`
	Type       string `xml:"type,attr"`
	StackTrace string `xml:"stackTrace"`
	SystemOut  string `xml:"system-out"`
}

// junitMaxReruns bounds the flakyFailure and rerunFailure elements of one
// testcase; a system-out line says how many more there were.
const junitMaxReruns = 10

// junitTime is the Ant schema's timestamp: ISO 8601 without a zone (UTC).
const junitTime = "2006-01-02T15:04:05"

// JUnit renders the report as JUnit XML: failures are verdict failures,
// errors are inconclusive cases.
func (r *Report) JUnit() ([]byte, error) {
	s := junitSuite{Name: "sshrig " + r.Tool, Time: seconds(r.Summary.DurationMS),
		Timestamp:  r.Started.UTC().Format(junitTime),
		Properties: []junitProperty{{"tool", r.Tool}, {"target", r.Target}, {"budget", r.Budget}, {"log_head", r.LogHead}}}
	if r.Jump {
		s.Properties = append(s.Properties, junitProperty{"jump", "true"})
	}
	if r.Hosts > 1 {
		s.Properties = append(s.Properties, junitProperty{"hosts", strconv.Itoa(r.Hosts)})
	}
	if r.Net != "" {
		s.Properties = append(s.Properties, junitProperty{"net", r.Net})
	}
	if r.Repeat != nil {
		s.Properties = append(s.Properties, junitProperty{"seed", strconv.FormatUint(r.Repeat.Seed, 10)},
			junitProperty{"max_failure_rate", strconv.FormatFloat(r.Repeat.MaxFailureRate, 'g', -1, 64)})
		s.Cases = r.junitRates()
	} else {
		for _, c := range r.Cases {
			s.Cases = append(s.Cases, r.junitRun(c))
		}
	}
	if r.Shard != nil {
		s.Properties = append(s.Properties, junitProperty{"shard", r.Shard.String()})
	}
	for _, c := range s.Cases {
		s.Tests++
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
	b, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// junitRun is one case run as a testcase.
func (r *Report) junitRun(c CaseReport) junitCase {
	jc := junitCase{Name: c.ID, Classname: "sshrig." + r.Target, Time: seconds(c.DurationMS),
		Properties: caseProperties(c), SystemOut: caseRunText(c)}
	switch c.Verdict {
	case Fail:
		jc.Failure = &junitMessage{Message: "verdict failed", Type: violationTypes(c), Body: violationText(c)}
	case Inconclusive:
		jc.Error = &junitMessage{Message: "inconclusive", Body: c.Reason}
	case Skipped:
		jc.Skipped = &junitMessage{Message: c.Reason}
	}
	return jc
}

// caseProperties are a case run's properties: what a reader of the CI's
// test page needs to find it in the run directory.
func caseProperties(c CaseReport) []junitProperty {
	p := []junitProperty{{"correlation_id", c.CorrelationID}, {"moment", c.Moment.String()}, {"cut", c.Cut},
		{"disposition", c.Disposition}, {"expected", string(c.Expected.Category) + "/" + string(c.Expected.Retry)}}
	if c.Transcript != "" {
		p = append(p, junitProperty{"transcript", c.Transcript})
	}
	if c.Draw != nil {
		p = append(p, junitProperty{"run", c.RunName()}, junitProperty{"seed", strconv.FormatUint(c.Draw.Seed, 10)})
	}
	if c.Upload != nil {
		p = append(p, junitProperty{"upload", c.Upload.String()})
	}
	// A fleet's hosts, each with its verdict, by position: the addresses
	// change from run to run, the positions do not.
	for i, h := range c.Hosts {
		p = append(p, junitProperty{"host." + strconv.Itoa(i+1), h.Line()})
	}
	return p
}

// junitRates is a repeated run's testcases, one per case.
func (r *Report) junitRates() []junitCase {
	byID := map[string][]CaseReport{}
	for _, c := range r.Cases {
		byID[c.ID] = append(byID[c.ID], c)
	}
	var threshold float64
	if r.Repeat != nil {
		threshold = r.Repeat.MaxFailureRate
	}
	var out []junitCase
	for _, rate := range r.Rates {
		runs := byID[rate.ID]
		var ms int64
		var text []string
		for _, c := range runs {
			ms += c.DurationMS
			text = append(text, caseRunLine(c))
		}
		jc := junitCase{Name: rate.ID, Classname: "sshrig." + r.Target, Time: seconds(ms), Properties: rateProperties(rate, runs)}
		var failing []CaseReport
		for _, c := range runs {
			if c.Verdict == Fail {
				failing = append(failing, c)
			}
		}
		switch {
		case rate.Fail > 0 && rate.Failure.Rate > threshold:
			first := failing[0]
			jc.Failure = &junitMessage{Message: fmt.Sprintf("failed %d of %d judged runs: %s", rate.Fail, rate.Judged(), rate.Failure),
				Type: violationTypes(first), Body: first.RunName() + " " + first.CorrelationID + "\n" + violationText(first)}
			jc.Rerun, text = reruns(failing[1:], text)
		case rate.Fail > 0:
			jc.Flaky, text = reruns(failing, text)
		case rate.Inconclusive > 0:
			jc.Error = &junitMessage{Message: fmt.Sprintf("inconclusive in %d of %d runs", rate.Inconclusive, rate.Runs), Body: firstReason(runs, Inconclusive)}
		case rate.Pass == 0:
			jc.Skipped = &junitMessage{Message: firstReason(runs, Skipped)}
		}
		jc.SystemOut = strings.Join(text, "\n")
		out = append(out, jc)
	}
	return out
}

func rateProperties(rate CaseRate, runs []CaseReport) []junitProperty {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }
	p := []junitProperty{{"runs", strconv.Itoa(rate.Runs)}, {"pass", strconv.Itoa(rate.Pass)}, {"fail", strconv.Itoa(rate.Fail)},
		{"inconclusive", strconv.Itoa(rate.Inconclusive)}, {"failure_rate", f(rate.Failure.Rate)},
		{"failure_rate_low", f(rate.Failure.Low)}, {"failure_rate_high", f(rate.Failure.High)}, {"status", rate.Status()}}
	if len(runs) > 0 {
		c := runs[0]
		p = append(p, junitProperty{"moment", c.Moment.String()}, junitProperty{"cut", c.Cut}, junitProperty{"disposition", c.Disposition})
	}
	// The case run a reader should look at: the first failing one, else
	// the first.
	for _, c := range runs {
		if c.Verdict == Fail || rate.Fail == 0 {
			p = append(p, junitProperty{"run", c.RunName()}, junitProperty{"correlation_id", c.CorrelationID})
			if c.Transcript != "" {
				p = append(p, junitProperty{"transcript", c.Transcript})
			}
			break
		}
	}
	return p
}

// reruns is one flakyFailure or rerunFailure per failing run, at most
// junitMaxReruns, with a line in text for the rest.
func reruns(failing []CaseReport, text []string) ([]junitRerun, []string) {
	var out []junitRerun
	for i, c := range failing {
		if i == junitMaxReruns {
			text = append(text, fmt.Sprintf("%d more failing runs (report.json has them all)", len(failing)-i))
			break
		}
		out = append(out, junitRerun{Message: c.RunName() + " failed", Type: violationTypes(c), StackTrace: violationText(c),
			SystemOut: caseRunText(c)})
	}
	return out, text
}

func firstReason(runs []CaseReport, v Verdict) string {
	for _, c := range runs {
		if c.Verdict == v {
			return c.RunName() + ": " + c.Reason
		}
	}
	return ""
}

func violationTypes(c CaseReport) string {
	var t []string
	for _, v := range c.Violations {
		t = append(t, v.Assertion+"/"+v.Rule)
	}
	return strings.Join(t, ",")
}

func violationText(c CaseReport) string {
	var lines []string
	for _, v := range c.Violations {
		lines = append(lines, v.String())
	}
	return strings.Join(lines, "\n")
}

// caseRunLine is one line about a case run: name, id, verdict.
func caseRunLine(c CaseReport) string {
	s := fmt.Sprintf("%s %s %s", c.RunName(), c.CorrelationID, c.Verdict)
	if t := violationTypes(c); t != "" {
		s += " " + t
	}
	return s
}

// caseRunText is a case run's account for system-out.
func caseRunText(c CaseReport) string {
	reported := "nothing parseable"
	if c.Reported != nil {
		reported = string(c.Reported.Category) + "/" + string(c.Reported.Retry) + ": " + c.Reported.Message
	} else if c.ParseError != "" {
		reported = "malformed: " + c.ParseError
	}
	truth := "unknown"
	if c.Truth != nil {
		truth = string(c.Truth.State)
	}
	lines := []string{
		caseRunLine(c),
		fmt.Sprintf("moment %s, cut %s, disposition %s", c.Moment, c.Cut, c.Disposition),
		fmt.Sprintf("expected %s/%s; reported %s; truth %s", c.Expected.Category, c.Expected.Retry, reported, truth),
	}
	if c.Reason != "" {
		lines = append(lines, "reason: "+c.Reason)
	}
	if c.Transcript != "" {
		lines = append(lines, "transcript: "+c.Transcript)
	}
	if c.Agent != nil {
		lines = append(lines, c.Agent.lines()...)
	}
	return strings.Join(lines, "\n")
}

// lines are an agent's run for system-out: its calls in order, one a line
// and numbered, then the prompts and refusal, then the final answers.
func (a *AgentReport) lines() []string {
	lines := []string{"agent calls:"}
	for i, c := range a.Calls {
		lines = append(lines, fmt.Sprintf("%d %s", i+1, a.CallLine(c)))
	}
	lines = append(lines, a.Summary())
	for i, answer := range a.Answers {
		if answer == "" {
			answer = "(none printed)"
		}
		lines = append(lines, a.AnswerHead(i+1)+": "+answer)
	}
	return lines
}

// CallLine is one call of the agent's in one line, for JUnit and the HTML
// page: "create_record -> outcome_unknown/reconcile_first", "approve ->
// denied", "create_record -> refused: …; nothing was run". Where the case
// ran more than one agent process, the call names its own.
func (a *AgentReport) CallLine(c tool.AgentCall) string {
	name := c.Tool
	if a.processes() > 1 {
		name += fmt.Sprintf(" (process %d)", c.Process)
	}
	return name + " -> " + callOutcome(c)
}

// callOutcome is what the agent was told of a call: the person's decision
// for an approval, the result contract's category and retry for the rest,
// with what a lookup found; or that the rig ran nothing, and why.
func callOutcome(c tool.AgentCall) string {
	if c.Refused != "" {
		return "refused: " + c.Refused
	}
	var r struct {
		Decision string `json:"decision"`
		Category string `json:"category"`
		Retry    string `json:"retry"`
		Found    *bool  `json:"found"`
		RecordID string `json:"record_id"`
	}
	if err := json.Unmarshal([]byte(c.Result), &r); err != nil || (r.Decision == "" && r.Category == "") {
		if c.IsError {
			return "error, no result contract"
		}
		return "no result contract"
	}
	if r.Decision != "" {
		return r.Decision
	}
	s := r.Category + "/" + r.Retry
	switch {
	case r.Found != nil && *r.Found:
		s += " found " + r.RecordID
	case r.Found != nil:
		s += " not found"
	case r.RecordID != "":
		s += " " + r.RecordID
	}
	return s
}

// processes counts the agent processes the case ran, as its calls and
// answers name them.
func (a *AgentReport) processes() int {
	n := len(a.Answers)
	for _, c := range a.Calls {
		n = max(n, c.Process)
	}
	return n
}

// Summary is the agent's run besides its calls, in one line: how many
// calls and approval prompts, when the person refused and how many
// connections the server saw after it.
func (a *AgentReport) Summary() string {
	s := fmt.Sprintf("%d calls; approval prompts: %d", len(a.Calls), a.Prompts)
	if !a.DeniedAt.IsZero() {
		s += "; " + RefusalWords + " at " + a.DeniedAt.Format("15:04:05.000")
	}
	if a.ConnectionsAfterDenial != nil {
		s += fmt.Sprintf("; %d connections after the refusal", *a.ConnectionsAfterDenial)
	}
	return s
}

// AnswerHead names the final answer of agent process n: "final answer",
// or "final answer of process 2" where the case ran more than one.
func (a *AgentReport) AnswerHead(n int) string {
	if a.processes() > 1 {
		return fmt.Sprintf("final answer of process %d", n)
	}
	return "final answer"
}

func seconds(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }
