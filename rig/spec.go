package rig

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/internal/evidence"
	"github.com/sshrig/sshrig/internal/operations"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
)

// caseSpec is the engine's view of case c for one run, id.
func caseSpec(c matrix.Case, id string) engine.Spec {
	s := engine.Spec{ID: id, Moment: c.Moment, Cut: c.Cut, Disposition: c.Disposition, OutputBytes: c.OutputBytes,
		Credential: c.Credential, Refusal: c.Refusal, Host: c.Host, ChangedHostKey: c.ChangedHostKey, Hop: c.Hop,
		RebootPause: c.RebootPause}
	if l := c.Draw; l != nil && l.Link != nil {
		s.Link = *l.Link
	}
	if c.Draw != nil {
		s.AnswerDelay = answerDelay(c.Draw.AnswerDelayMS)
	}
	if c.Step != nil {
		st := *c.Step
		s.Step = &st
	}
	if cmd := heldCall(c, id); cmd != "" {
		s.HoldCommand = evidence.Digest(cmd)
	}
	return s
}

// heldCall is the command of the call case c's moment lands in when that
// is not the create (matrix.Case.Call): the lookup or the note on the true
// record of case run id, as the record-note scenario's tools send them;
// "" for the create, the workload.
func heldCall(c matrix.Case, id string) string {
	switch c.Call {
	case matrix.CallLookup:
		return operations.Lookup(id)
	case matrix.CallNote:
		return noteCommand(id)
	}
	return ""
}

// noteCommand is the note on the true record of case run id.
func noteCommand(id string) string { return operations.FollowUp(operations.RecordID(id)) }

// caseSpec is caseSpec with what the run adds to every case: a server
// refusing terminals, and the workload's request the preflight learned.
func (r *runner) caseSpec(c matrix.Case, id string) engine.Spec {
	s := caseSpec(c, id)
	s.RefusePTY = r.o.RefusePTY
	s.WorkloadRequest = r.workloadRequest
	return s
}

// caseLink is the slow-link faults of case c's run: the case's own, or the
// run's, drawn from the case run's seed; nil for none.
func caseLink(c matrix.Case, run *matrix.Link, seed uint64) *matrix.Link {
	l := run
	if c.Link != nil {
		l = c.Link
	}
	if l == nil || !l.On() {
		return nil
	}
	d := *l
	d.Seed = seed
	return &d
}

// NewShardReport is the record of shard s of selection.
func NewShardReport(s matrix.Shard, selection []matrix.Case) *report.ShardReport {
	r := &report.ShardReport{Index: s.Index, Count: s.Count}
	for _, c := range selection {
		r.Selection = append(r.Selection, c.ID)
	}
	return r
}

// shardIDs is the part of the record's selection that is its shard's.
func shardIDs(r *report.ShardReport) []string {
	return matrix.Shard{Index: r.Index, Count: r.Count}.IDs(r.Selection)
}

// writeConversation says, for a run's progress, what the preflight learned:
// the tool's conversation, one request a line, and the step cases made of it.
func writeConversation(w io.Writer, pre report.Preflight) {
	fmt.Fprintf(w, "preflight: the tool's conversation has %d requests:\n", len(pre.Conversation))
	for _, r := range pre.Conversation {
		where := ""
		if r.Place != fault.NoWorkload && r.Place != fault.BeforeWorkload {
			where = " [" + string(r.Place) + "]"
		}
		fmt.Fprintf(w, "  %3d conn %d session %d: %s%s\n", r.Step, r.Conn, r.Session, r, where)
	}
	switch {
	case pre.StepsCapped > 0:
		fmt.Fprintf(w, "preflight: %d step cases (capped at %d steps: %d later steps get none)\n", pre.StepCases, matrix.MaxSteps, pre.StepsCapped)
	case pre.StepCases > 0:
		fmt.Fprintf(w, "preflight: %d step cases (--cases 'step.*' selects them)\n", pre.StepCases)
	}
}

// caseAnswerDelay is the answer delay of case c's run in milliseconds, as
// Draw records it: the case's own range, or the run's, drawn from the case
// run's seed; 0 for none.
func caseAnswerDelay(c matrix.Case, run *matrix.AnswerDelay, seed uint64) float64 {
	d := run
	if c.AnswerDelay != nil {
		d = c.AnswerDelay
	}
	if d == nil || d.Max == 0 {
		return 0
	}
	return float64(d.At(seed)) / float64(time.Millisecond)
}

// answerDelay is a recorded draw back as a duration.
func answerDelay(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}

// expectation is the case's Expectation as the verdict reads it.
func expectation(c matrix.Case) *verdict.Expectation {
	e := c.Expectation()
	if e == nil {
		return nil
	}
	return &verdict.Expectation{Category: e.Category, Retry: e.Retry}
}
