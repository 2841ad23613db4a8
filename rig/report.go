package rig

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/result"
)

// ReportVersion is the report.json format version.
const ReportVersion = 1

// Report is report.json.
type Report struct {
	Version int       `json:"version"`
	Tool    string    `json:"tool"`
	Target  string    `json:"target"`
	Where   string    `json:"where"`
	Started time.Time `json:"started"`
	Budget  string    `json:"budget"`
	// LogHead is the event log's head, "seq:hash": sshrig verify checks the
	// log against it, so a cut tail is detected.
	LogHead   string       `json:"log_head,omitempty"`
	Preflight Preflight    `json:"preflight"`
	Summary   Summary      `json:"summary"`
	Cases     []CaseReport `json:"cases"`

	// Repeat and Rates are set for a repeated run (rig/aggregate.go).
	Repeat *RepeatReport `json:"repeat,omitempty"`
	Rates  []CaseRate    `json:"rates,omitempty"`

	// Shard is set for one shard of a run (sshrig run --shard, rig/shard.go);
	// Merged lists the shards a merged report was made of (sshrig merge,
	// rig/merge.go).
	Shard  *ShardReport  `json:"shard,omitempty"`
	Merged []MergedShard `json:"merged,omitempty"`
	// JUnit says the run also wrote JUnit XML, so a merge of its shards
	// writes it too.
	WroteJUnit bool `json:"junit,omitempty"`

	// casesOnDisk: Cases are not held; report.json has them (Run).
	casesOnDisk bool
}

// CasesOnDisk reports that the report holds no Cases because the run kept
// them in its run directory only (a repeated run, rig.Run): ReadReport of
// the directory has them.
func (r *Report) CasesOnDisk() bool { return r.casesOnDisk }

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
	Conversation []ConversationRequest `json:"conversation,omitempty"`
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
	Pass         = Verdict(verdict.Pass)
	Fail         = Verdict(verdict.Fail)
	Inconclusive = Verdict(verdict.Inconclusive) // the rig could not establish what it needed
	Skipped      = Verdict(verdict.Skipped)      // the case cannot apply to the tool
)

// Grade is how a reported category and retry compare with what the caller
// could know.
type Grade string

// Grades.
const (
	Exact        = Grade(verdict.Exact)
	Conservative = Grade(verdict.Conservative) // safe, but claims less than could be known
	Unsafe       = Grade(verdict.Unsafe)       // claims more than could be known, or invites a blind retry
)

// The four assertions of a case (DESIGN.md, "The verdict"), as
// Violation.Assertion names them.
const (
	AssertCategory = verdict.AssertCategory // category and retry fit what the caller could know
	AssertNoBlind  = verdict.AssertNoBlind  // no blind retry, and no hang
	AssertRemote   = verdict.AssertRemote   // the remote state is established
	AssertEvidence = verdict.AssertEvidence // the log holds the id and result, nothing secret
)

// Violation is one finding against the tool: the assertion it breaks, the
// rule within it (e.g. "unsafe_category"), and what was seen.
type Violation struct {
	Assertion string `json:"assertion"`
	Rule      string `json:"rule"`
	Detail    string `json:"detail"`
}

func (v Violation) String() string { return v.Assertion + "/" + v.Rule + ": " + v.Detail }

// Expected is the honest category and retry for the case.
type Expected struct {
	Category result.Category `json:"category"`
	Retry    result.Retry    `json:"retry"`
}

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
	Expected      Expected               `json:"expected"`
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
	Draw          *Draw                  `json:"draw,omitempty"` // a repeated run's draws (rig/repeat.go)
	// Step, for a step case, is the request of the conversation it cut at.
	Step *fault.Step `json:"step,omitempty"`
	// PartialUploads names the files a step case's cut upload left partial
	// on the target.
	PartialUploads []string `json:"partial_uploads,omitempty"`

	diag            *diagnosis            // both sides' account, for the preflight's message
	answered        []Violation           // the tool's own findings (tool.Answer), redacted, for the same
	workloadRequest int                   // evidence.Case.WorkloadRequest, for the preflight
	conversation    []ConversationRequest // evidence.Case.Conversation, for the preflight
}

func (r *Report) summarize(d time.Duration) {
	s := Summary{Cases: len(r.Cases), DurationMS: d.Milliseconds()}
	for _, c := range r.Cases {
		switch c.Verdict {
		case Pass:
			s.Pass++
		case Fail:
			s.Fail++
		case Inconclusive:
			s.Inconclusive++
		case Skipped:
			s.Skipped++
		}
	}
	r.Summary = s
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

// WriteTable prints one row per case: case, expected, reported, truth, verdict.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tEXPECTED\tREPORTED\tTRUTH\tVERDICT")
	for _, c := range r.Cases {
		reported := "-"
		switch {
		case c.Reported != nil:
			reported = string(c.Reported.Category) + "/" + string(c.Reported.Retry)
		case c.ParseError != "":
			reported = "malformed"
		}
		truth := "-"
		if c.Truth != nil {
			truth = string(c.Truth.State)
			if c.Truth.State == reconcile.Completed && c.Truth.ExitCode != nil {
				truth += fmt.Sprintf("(%d)", *c.Truth.ExitCode)
			}
			if c.Truth.Starts > 1 {
				truth += fmt.Sprintf(" x%d", c.Truth.Starts)
			}
		}
		v := string(c.Verdict)
		if c.Grade == Conservative {
			v += " (conservative)"
		}
		var notes []string
		for _, x := range c.Violations {
			notes = append(notes, x.Assertion+"/"+x.Rule)
		}
		if len(notes) > 0 {
			v += ": " + strings.Join(notes, ", ")
		} else if c.Verdict != Pass && c.Reason != "" {
			v += ": " + c.Reason
		}
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\n", c.ID, c.Expected.Category, c.Expected.Retry, reported, truth, v)
	}
	return tw.Flush()
}

// SummaryLine is the one-line summary printed after the table.
func (r *Report) SummaryLine() string {
	s := r.Summary
	return fmt.Sprintf("%d cases: %d pass, %d fail, %d inconclusive, %d skipped in %.1fs (tool %s, target %s)",
		s.Cases, s.Pass, s.Fail, s.Inconclusive, s.Skipped, float64(s.DurationMS)/1000, r.Tool, r.Target)
}
