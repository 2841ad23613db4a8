package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/reading"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// ReportVersion is the report.json format version.
const ReportVersion = 1

// ReportFile is the report's name in a run directory.
const ReportFile = "report.json"

// Report is report.json.
type Report struct {
	Version int    `json:"version"`
	Tool    string `json:"tool"`
	Target  string `json:"target"`
	Where   string `json:"where"`
	// Net is where the tool met the server: "proxy" or "kernel"
	// (docs/network.md); empty in reports written before it existed.
	Net string `json:"net,omitempty"`
	// Jump: the tool reached every host through a jump host (run --jump).
	Jump bool `json:"jump,omitempty"`
	// Hosts, for a run on a fleet (run --hosts N), is N: each case ran on
	// that many hosts, and CaseReport.Hosts judges each.
	Hosts int `json:"hosts,omitempty"`
	// ToolSettings are the tool's settings besides its name (tool.Settled:
	// an agent's limits), for a replay.
	ToolSettings map[string]string `json:"tool_settings,omitempty"`
	Started      time.Time         `json:"started"`
	Budget       string            `json:"budget"`
	// LogHead is the event log's head, "seq:hash": sshrig verify checks the
	// log against it, so a cut tail is detected.
	LogHead   string       `json:"log_head,omitempty"`
	Preflight Preflight    `json:"preflight"`
	Summary   Summary      `json:"summary"`
	Cases     []CaseReport `json:"cases"`

	// Repeat and Rates are set for a repeated run (report/rates.go).
	Repeat *RepeatReport `json:"repeat,omitempty"`
	Rates  []CaseRate    `json:"rates,omitempty"`

	// Shard is set for one shard of a run (sshrig run --shard, matrix/shard.go);
	// Merged lists the shards a merged report was made of (sshrig merge,
	// rig/merge.go).
	Shard  *ShardReport  `json:"shard,omitempty"`
	Merged []MergedShard `json:"merged,omitempty"`
	// JUnit says the run also wrote JUnit XML, so a merge of its shards
	// writes it too.
	WroteJUnit bool `json:"junit,omitempty"`
	// Parallel is how many cases ran at once and why (rig/sizing.go).
	Parallel *ParallelReport `json:"parallel,omitempty"`
	// Interrupted says the run was stopped (Ctrl-C) before every case ran:
	// the report holds what it judged; cases cut short are inconclusive.
	Interrupted bool `json:"interrupted,omitempty"`
	// Reading names the reading that turned the tool's own reports into
	// results; Ambiguities are the native values that stood for answers
	// calling for different next actions (rig/readings.go).
	Reading     string              `json:"reading,omitempty"`
	Ambiguities []reading.Ambiguity `json:"ambiguities,omitempty"`

	// CasesOnDisk says the report holds no Cases because the run kept them
	// in its run directory only (a repeated run, rig.Run): ReadReport of
	// the directory has them.
	CasesOnDisk bool `json:"-"`
}

// Summary counts the cases by verdict.
type Summary struct {
	Cases        int   `json:"cases"`
	Pass         int   `json:"pass"`
	Fail         int   `json:"fail"`
	Inconclusive int   `json:"inconclusive"`
	Skipped      int   `json:"skipped"`
	DurationMS   int64 `json:"duration_ms"`
}

// Preflight records the no-fault case run before the matrix.
type Preflight struct {
	Error string      `json:"error,omitempty"`
	Case  *CaseReport `json:"case,omitempty"`
	// WorkloadRequest is the ordinal of the exec or shell request that ran
	// the preflight's workload, when the server could not recognise it by
	// itself (a script uploaded, then run): every case holds its exec
	// moment there.
	WorkloadRequest int `json:"workload_request,omitempty"`
	// Conversation is every request of the preflight's SSH conversation:
	// each case's is compared with it (a case whose conversation differs
	// before its cut is inconclusive), and step cases are made from it.
	Conversation []fault.Request `json:"conversation,omitempty"`
	// StepCases is how many step cases the conversation yielded (before
	// --cases selected among them); StepsCapped how many steps MaxSteps
	// left out.
	StepCases   int `json:"step_cases,omitempty"`
	StepsCapped int `json:"steps_capped,omitempty"`
}

// Verdict is a case's outcome.
type Verdict string

// Verdicts.
const (
	Pass         Verdict = "pass"
	Fail         Verdict = "fail"
	Inconclusive Verdict = "inconclusive" // the rig could not establish what it needed
	Skipped      Verdict = "skipped"      // the case cannot apply to the tool
)

// Grade is how a reported category and retry compare with what the caller
// could know.
type Grade string

// Grades.
const (
	Exact        Grade = "exact"
	Conservative Grade = "conservative" // safe, but claims less than could be known
	Unsafe       Grade = "unsafe"       // claims more than could be known, or invites a blind retry
)

// The four assertions of a case (DESIGN.md, "The verdict"), as
// Violation.Assertion names them.
const (
	AssertCategory = "category"       // category and retry fit what the caller could know
	AssertNoBlind  = "no_blind_retry" // no blind retry, and no hang
	AssertRemote   = "remote_state"   // the remote state is established
	AssertEvidence = "evidence"       // the log holds the id and result, nothing secret
)

// Violation is one finding against the tool: the assertion it breaks, the
// rule within it (e.g. "unsafe_category"), and what was seen.
type Violation struct {
	Assertion string `json:"assertion"`
	Rule      string `json:"rule"`
	Detail    string `json:"detail"`
}

func (v Violation) String() string { return v.Assertion + "/" + v.Rule + ": " + v.Detail }

// CaseReport is one case in report.json.
type CaseReport struct {
	ID            string                 `json:"id"`
	Alias         string                 `json:"alias,omitempty"`
	Moment        fault.Moment           `json:"moment"`
	Cut           string                 `json:"cut"`
	Disposition   string                 `json:"disposition"`
	Tool          string                 `json:"tool"`
	Verdict       Verdict                `json:"verdict"`
	Grade         Grade                  `json:"grade,omitempty"`
	CorrelationID string                 `json:"correlation_id"`
	Operation     string                 `json:"operation"`
	Expected      matrix.Expected        `json:"expected"`
	Reported      *result.Result         `json:"reported"`
	ParseError    string                 `json:"parse_error,omitempty"`
	Truth         *reconcile.TruthReport `json:"truth"`
	Violations    []Violation            `json:"violations"`
	Steps         string                 `json:"steps,omitempty"` // a step sequence's path
	Reason        string                 `json:"reason,omitempty"`
	DurationMS    int64                  `json:"duration_ms"`
	ToolMS        int64                  `json:"tool_ms"`
	CutLatencyUS  int64                  `json:"cut_latency_us,omitempty"`
	Transcript    string                 `json:"transcript,omitempty"`
	Draw          *matrix.Draw           `json:"draw,omitempty"` // a repeated run's draws (rig/repeat.go)
	// Step, for a step case, is the request of the conversation it cut at.
	Step *fault.Step `json:"step,omitempty"`
	// Upload, for a step case that cut an upload, is what the cut left on
	// the case's host.
	Upload *Upload `json:"upload,omitempty"`
	// Agent, for an agent under test (sshrig agent), is its run's own
	// account: every call, the approvals, the final answers.
	Agent *AgentReport `json:"agent,omitempty"`
	// Native, for a tool read by a reading, is the value its own report
	// became (the reading's rule); NotApplicable names the checks its report
	// cannot meet (it echoes no correlation id), neither passed nor failed.
	Native        string   `json:"native,omitempty"`
	NotApplicable []string `json:"not_applicable,omitempty"`
	// ConfirmedAlone is set when the case's first run's verdict rested on
	// timing while the machine was busy, and the case ran again alone
	// (rig/confirm.go); the verdict above is the alone run's.
	ConfirmedAlone *ConfirmedAlone `json:"confirmed_alone,omitempty"`
	// Hosts, for a case run on a fleet, is each host's verdict; the case's
	// is the worst of them, and its violations name their host.
	Hosts []HostReport `json:"hosts,omitempty"`
}

// Upload is what a step case's cut upload left on the case's host, as the
// server measured it when the case ended (docs/matrix.md, Step cases).
type Upload struct {
	// Path is the file as the tool named it (resolved to an absolute path
	// in the case's home or /tmp).
	Path string `json:"path"`
	// Arrived is how many bytes of the file reached the server before the
	// cut; the rest was dropped.
	Arrived int64 `json:"arrived"`
	// Size and SHA256 are the file's on the host: what the copier wrote
	// of the bytes that arrived (OpenSSH's SFTP server all of them, scp -t
	// whole blocks only, so possibly none).
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	// TempFiles are the other files in its directory that an upload of
	// the case began and never finished, by name.
	TempFiles []string `json:"temp_files,omitempty"`
	// Absent says why there is no file to measure (the tool removed it, or
	// it lies outside the case's host).
	Absent string `json:"absent,omitempty"`
	// Rewritten: an upload of the same name finished after the cut, so the
	// file is no longer what the cut left.
	Rewritten bool `json:"rewritten,omitempty"`
}

// LeftPartial reports whether the cut left a partial file on the host: it
// is there, and no later upload of its name finished.
func (u *Upload) LeftPartial() bool { return u != nil && u.Absent == "" && !u.Rewritten }

// String says it in one line, for JUnit and the HTML page:
// "/home/u/job.sh: 64 of its bytes arrived; on the host 64 bytes, sha256 9f2c…".
func (u *Upload) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of its bytes arrived", u.Path, u.Arrived)
	if u.Absent != "" {
		fmt.Fprintf(&b, "; no file on the host (%s)", u.Absent)
	} else {
		fmt.Fprintf(&b, "; on the host %d bytes, sha256 %s", u.Size, u.SHA256)
	}
	if u.Rewritten {
		b.WriteString("; rewritten by a later upload")
	}
	if len(u.TempFiles) > 0 {
		fmt.Fprintf(&b, "; unfinished uploads beside it: %s", strings.Join(u.TempFiles, ", "))
	}
	return b.String()
}

// Line is the host's verdict in one line, for JUnit and the HTML page:
// "127.0.0.1:40022 (cut): fail; expected outcome_unknown/reconcile_first,
// reported succeeded/never, truth completed; no_blind_retry/blind_retry".
func (h HostReport) Line() string {
	var b strings.Builder
	b.WriteString(h.Host)
	if h.Cut {
		b.WriteString(" (cut)")
	}
	fmt.Fprintf(&b, ": %s", h.Verdict)
	if h.Grade != "" && h.Verdict == Pass {
		fmt.Fprintf(&b, " (%s)", h.Grade) // as the case table says "pass (conservative)"
	}
	fmt.Fprintf(&b, "; expected %s/%s, reported ", h.Expected.Category, h.Expected.Retry)
	if h.Reported != nil {
		fmt.Fprintf(&b, "%s/%s", h.Reported.Category, h.Reported.Retry)
	} else {
		b.WriteString("nothing")
	}
	if h.Truth != nil {
		fmt.Fprintf(&b, ", truth %s", h.Truth.State)
	}
	for i, v := range h.Violations {
		sep := ", "
		if i == 0 {
			sep = "; "
		}
		fmt.Fprintf(&b, "%s%s/%s", sep, v.Assertion, v.Rule)
	}
	return b.String()
}

// HostReport is one host of a case run on a fleet, judged as a case of its
// own: what the tool reported of it against what it could know and what
// happened there.
type HostReport struct {
	Host string `json:"host"` // as the tool was given it
	ID   string `json:"id"`   // the host's own id: its markers' and the server's
	// Cut: the case's cut killed this host; the others ran without a fault.
	Cut        bool                   `json:"cut,omitempty"`
	Verdict    Verdict                `json:"verdict"`
	Grade      Grade                  `json:"grade,omitempty"`
	Expected   matrix.Expected        `json:"expected"`
	Reported   *result.HostResult     `json:"reported"`
	Truth      *reconcile.TruthReport `json:"truth"`
	Violations []Violation            `json:"violations"`
	Reason     string                 `json:"reason,omitempty"`
}

// Summarize counts cases by verdict; the run took d.
func Summarize(cases []CaseReport, d time.Duration) Summary {
	var a Aggregator
	for _, c := range cases {
		a.Add(c)
	}
	s := a.Summary()
	s.DurationMS = d.Milliseconds()
	return s
}

// Executed counts the cases that ran (everything but skipped).
func (s Summary) Executed() int { return s.Cases - s.Skipped }

// JSON renders the report.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// WriteTable prints one row per case that ran: case, expected, reported,
// truth, verdict; a failing row ends in a short sentence of why (its first
// violation's own detail). Skipped cases follow, one line per reason.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tEXPECTED\tREPORTED\tTRUTH\tVERDICT")
	skipped := map[string][]string{} // reason -> case ids
	var reasons []string
	for _, c := range r.Cases {
		if c.Verdict == Skipped {
			if _, ok := skipped[c.Reason]; !ok {
				reasons = append(reasons, c.Reason)
			}
			skipped[c.Reason] = append(skipped[c.Reason], c.ID)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\n", c.ID, c.Expected.Category, c.Expected.Retry, reportedText(c), truthText(c), verdictText(c))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, why := range reasons {
		ids := skipped[why]
		fmt.Fprintf(w, "skipped %d: %s (%s)\n", len(ids), why, listShort(ids, 4))
	}
	return nil
}

// whyWidth bounds the sentence of why on a table row.
const whyWidth = 110

func verdictText(c CaseReport) string {
	v := string(c.Verdict)
	if c.Grade == Conservative {
		v += " (conservative)"
	}
	var notes []string
	for _, x := range c.Violations {
		notes = append(notes, x.Assertion+"/"+x.Rule)
	}
	switch {
	case len(notes) > 0:
		v += ": " + strings.Join(notes, ", ") + " — " + shorten(c.Violations[0].Detail, whyWidth)
	case c.Verdict != Pass && c.Reason != "":
		v += ": " + shorten(c.Reason, whyWidth)
	}
	return v
}

func reportedText(c CaseReport) string {
	switch {
	case c.Reported != nil:
		return string(c.Reported.Category) + "/" + string(c.Reported.Retry)
	case c.ParseError != "":
		return "malformed"
	}
	return "-"
}

func truthText(c CaseReport) string {
	if c.Truth == nil {
		return "-"
	}
	truth := string(c.Truth.State)
	if c.Truth.State == reconcile.Completed && c.Truth.ExitCode != nil {
		truth += fmt.Sprintf("(%d)", *c.Truth.ExitCode)
	}
	if c.Truth.Starts > 1 {
		truth += fmt.Sprintf(" x%d", c.Truth.Starts)
	}
	return truth
}

// shorten cuts s to n runes at a word, on one line.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	cut := string(r[:n])
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		cut = cut[:i]
	}
	return cut + "…"
}

// listShort names up to n ids, and how many more.
func listShort(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:n], ", ") + fmt.Sprintf(" and %d more", len(ids)-n)
}

// WriteTally prints, after a run with failures, one line per violated
// rule, most cases first: how many cases, at which moments, what the
// honest answer was there, and the first case to replay. It prints
// nothing when no case failed.
func (r *Report) WriteTally(w io.Writer) {
	type tally struct {
		rule    string
		cases   []string
		moments []string
		honest  []string
	}
	byRule := map[string]*tally{}
	var order []string
	for _, c := range r.Cases {
		if c.Verdict != Fail {
			continue
		}
		seen := map[string]bool{}
		for _, v := range c.Violations {
			key := v.Assertion + "/" + v.Rule
			if seen[key] {
				continue
			}
			seen[key] = true
			t, ok := byRule[key]
			if !ok {
				t = &tally{rule: key}
				byRule[key] = t
				order = append(order, key)
			}
			t.cases = append(t.cases, c.ID)
			if m := c.Moment.String(); !slices.Contains(t.moments, m) {
				t.moments = append(t.moments, m)
			}
			if h := string(c.Expected.Category) + "/" + string(c.Expected.Retry); !slices.Contains(t.honest, h) {
				t.honest = append(t.honest, h)
			}
		}
	}
	if len(order) == 0 {
		return
	}
	sort.SliceStable(order, func(i, j int) bool { return len(byRule[order[i]].cases) > len(byRule[order[j]].cases) })
	fmt.Fprintln(w, "\nFailures by rule (fix the first first):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tCASES\tMOMENTS\tHONEST ANSWER THERE\tFIRST CASE")
	for _, key := range order {
		t := byRule[key]
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", t.rule, len(t.cases), listShort(t.moments, 5), strings.Join(t.honest, ", "), t.cases[0])
	}
	tw.Flush()
}

// FirstFailure is the id of the first failing case, "" when none failed.
func (r *Report) FirstFailure() string {
	for _, c := range r.Cases {
		if c.Verdict == Fail {
			return c.ID
		}
	}
	return ""
}

// SummaryLine is the one-line summary printed after the table.
func (r *Report) SummaryLine() string {
	s := r.Summary
	return fmt.Sprintf("%d cases: %d pass, %d fail, %d inconclusive, %d skipped in %.1fs (tool %s, target %s)",
		s.Cases, s.Pass, s.Fail, s.Inconclusive, s.Skipped, float64(s.DurationMS)/1000, r.Tool, r.Target)
}

// PreflightError means the chain is not invocable: the run (of cases, or of
// a reconcile probe) stops before any case.
type PreflightError struct {
	Reason string
	Case   *CaseReport // the preflight's own record, when it got that far
}

func (e *PreflightError) Error() string { return "preflight: " + e.Reason }

// ConfirmedAlone is a case run again alone because its first run's verdict
// rested on timing while the machine was busy. The case's verdict, and the
// rest of its report, are the alone run's.
type ConfirmedAlone struct {
	// Busy says how the machine was busy during the first run.
	Busy  string    `json:"busy"`
	First CaseRunOf `json:"first"`
	Alone CaseRunOf `json:"alone"`
}

// CaseRunOf is one run of a case, as ConfirmedAlone records it.
type CaseRunOf struct {
	CorrelationID string   `json:"correlation_id"`
	Verdict       Verdict  `json:"verdict"`
	Grade         Grade    `json:"grade,omitempty"`
	Rules         []string `json:"rules,omitempty"` // assertion/rule of each violation
	Reason        string   `json:"reason,omitempty"`
	DurationMS    int64    `json:"duration_ms"`
	ToolMS        int64    `json:"tool_ms"`
	Transcript    string   `json:"transcript,omitempty"`
}

// RunOf is the case run as ConfirmedAlone records it.
func (c CaseReport) RunOf() CaseRunOf {
	r := CaseRunOf{CorrelationID: c.CorrelationID, Verdict: c.Verdict, Grade: c.Grade, Reason: c.Reason,
		DurationMS: c.DurationMS, ToolMS: c.ToolMS, Transcript: c.Transcript}
	for _, v := range c.Violations {
		r.Rules = append(r.Rules, v.Assertion+"/"+v.Rule)
	}
	return r
}

// ParallelReport is report.json's "parallel": how many cases ran at once
// and why.
type ParallelReport struct {
	Chosen int    `json:"chosen"`
	Why    string `json:"why"`
	// Explicit: --parallel (Options.Parallel) chose it.
	Explicit bool `json:"explicit,omitempty"`
	// What the preflight measured: one case's CPU time (the rig's process
	// and its children) and wall time, the machine's cores, the cores'
	// worth of other work running beside it, and the load average.
	CaseCPUMS       int64   `json:"case_cpu_ms"`
	CaseWallMS      int64   `json:"case_wall_ms"`
	Cores           int     `json:"cores"`
	BackgroundCores float64 `json:"background_cores"`
	Load1           float64 `json:"load1,omitempty"`
}

// Line is the progress output's line about it.
func (p ParallelReport) Line() string {
	return fmt.Sprintf("sshrig: %d cases at once: %s", p.Chosen, p.Why)
}

// WriteAmbiguities prints, for a run whose tool was read by a reading, each
// native value that stood for answers calling for different next actions.
func (r *Report) WriteAmbiguities(w io.Writer) error {
	if len(r.Ambiguities) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nThe tool's own report is ambiguous (reading %s): an agent reading these values cannot tell what to do next.\n", r.Reading)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NATIVE VALUE\tHONEST ANSWERS IT STANDS FOR\tCASES")
	for _, a := range r.Ambiguities {
		var parts []string
		for _, ans := range a.Answers {
			parts = append(parts, fmt.Sprintf("%s (%d, e.g. %s)", ans, len(a.Cases[ans]), a.Cases[ans][0]))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\n", a.Native, strings.Join(parts, "; "), a.CaseCount())
	}
	return tw.Flush()
}

// RefusalWords name the moment the person the rig plays refused an agent's
// approval or let it go unanswered, as the verdict's details, JUnit and the
// HTML page say it.
const RefusalWords = "the person refused (or did not answer)"

// AgentReport is an agent case run's account (sshrig agent): every MCP call
// the agent made in order, with the result it saw, the approval prompts,
// the final answers, and what the server's own events show after a
// refusal.
type AgentReport struct {
	tool.AgentRun
	// ConnectionsAfterDenial, where the person refused (or never
	// answered), counts the connections of the case the SSH server saw
	// after that moment, from its own events; nil where nobody refused.
	ConnectionsAfterDenial *int `json:"connections_after_denial,omitempty"`
}
