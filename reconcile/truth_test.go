package reconcile

import (
	"strings"
	"testing"

	"github.com/sshrig/sshrig/markers"
)

// TestDeriveNested: where the markers' shell is not the process the server
// started (a module wrapper that exits 1 for any failure, a wrapper killed
// once the workload completed), the ledger says how the workload ended and
// the wrapper's own end is no disagreement; where it is the same process,
// a different exit code or a kill after the complete marker still is.
func TestDeriveNested(t *testing.T) {
	ledger := &markers.Ledger{Entries: []markers.Entry{
		{ID: "c-1", Kind: markers.Start, PID: 7},
		{ID: "c-1", Kind: markers.Complete, ExitCode: 3, PID: 7},
	}}
	one := 1
	for _, tc := range []struct {
		name     string
		proc     Process
		disagree string // a substring of the disagreement, "" for none
	}{
		{"nested, the wrapper exits 1", Process{PID: 7, ReachedStart: true, Exited: true, ExitCode: &one, Nested: true}, ""},
		{"nested, the wrapper killed after", Process{PID: 7, ReachedStart: true, Exited: true, Signal: "HUP", Nested: true}, ""},
		{"the same process exits 1", Process{PID: 7, ReachedStart: true, Exited: true, ExitCode: &one}, "the ledger says exit 3, the server saw exit 1"},
		{"the same process killed", Process{PID: 7, ReachedStart: true, Exited: true, Signal: "HUP"}, "the ledger says completed, the server says started"},
	} {
		tr := Derive("c-1", ledger, []Process{tc.proc})
		if tr.State != Completed || tr.ExitCode == nil || *tr.ExitCode != 3 {
			t.Errorf("%s: %s, want completed(3), the ledger's", tc.name, tr)
		}
		checkDisagreement(t, tc.name, tr, tc.disagree)
	}
}

// TestDeriveKilledBeforeItsGate: a process killed by a signal after it
// wrote its start marker and before the server saw its start gate is
// started, and no disagreement; one that exited on its own without
// reaching the gate while the ledger says it started still is.
func TestDeriveKilledBeforeItsGate(t *testing.T) {
	ledger := &markers.Ledger{Entries: []markers.Entry{{ID: "c-1", Kind: markers.Start, PID: 7}}}
	two := 2
	for _, tc := range []struct {
		name     string
		proc     Process
		disagree string
	}{
		{"hung up before the gate", Process{PID: 7, Exited: true, Signal: "HUP"}, ""},
		{"exited on its own before the gate", Process{PID: 7, Exited: true, ExitCode: &two}, "the ledger says started, the server says not_started"},
	} {
		tr := Derive("c-1", ledger, []Process{tc.proc})
		if tr.State != Started {
			t.Errorf("%s: %s, want started, the ledger's", tc.name, tr)
		}
		checkDisagreement(t, tc.name, tr, tc.disagree)
	}
}

// checkDisagreement: tr disagrees as want says (a substring of its
// disagreement, "" for none).
func checkDisagreement(t *testing.T, name string, tr Truth, want string) {
	t.Helper()
	switch {
	case want == "" && tr.Disagreement != "":
		t.Errorf("%s: disagreement %q, want none", name, tr.Disagreement)
	case want != "" && !strings.Contains(tr.Disagreement, want):
		t.Errorf("%s: disagreement %q, want %q", name, tr.Disagreement, want)
	}
}

// TestDeriveDeduplicated: a run that found its operation id claimed wrote a
// dedup marker and stopped before its start gate: it is no execution of the
// work and no disagreement, the state is the run that did the work, and
// Operations names the one id. A dedup marker the server saw start, or from
// a process the server never ran, is a disagreement.
func TestDeriveDeduplicated(t *testing.T) {
	ledger := &markers.Ledger{Entries: []markers.Entry{
		{ID: "c-1", Kind: markers.Start, PID: 7, OperationID: "op-1"},
		{ID: "c-1", Kind: markers.Complete, PID: 7},
		{ID: "c-1", Kind: markers.Dedup, PID: 9, OperationID: "op-1"},
	}}
	zero, dedup := 0, markers.ExitDeduplicated
	worked := Process{PID: 7, ReachedStart: true, Exited: true, ExitCode: &zero}
	for _, tc := range []struct {
		name     string
		procs    []Process
		disagree string
	}{
		{"the resend stopped before its gate", []Process{worked, {PID: 9, Exited: true, ExitCode: &dedup}}, ""},
		{"the server saw the resend start", []Process{worked, {PID: 9, ReachedStart: true, Exited: true, ExitCode: &dedup}}, "pid 9 wrote a dedup marker, but the server says completed"},
		{"the server never ran the resend", []Process{worked}, "pid 9 wrote a dedup marker but the server ran no such process"},
	} {
		tr := Derive("c-1", ledger, tc.procs)
		if tr.State != Completed || tr.Starts != 1 || tr.Dedups != 1 {
			t.Errorf("%s: %s with %d dedups, want completed(0) once and one dedup", tc.name, tr, tr.Dedups)
		}
		if ids, without := tr.Operations(); len(ids) != 1 || ids[0] != "op-1" || without {
			t.Errorf("%s: operations %v (a run without: %v), want op-1 only", tc.name, ids, without)
		}
		checkDisagreement(t, tc.name, tr, tc.disagree)
	}
	// A second run of the work under another id, and one under none.
	ledger.Entries = append(ledger.Entries, markers.Entry{ID: "c-1", Kind: markers.Start, PID: 11, OperationID: "op-2"}, markers.Entry{ID: "c-1", Kind: markers.Start, PID: 12})
	tr := Derive("c-1", ledger, nil)
	if ids, without := tr.Operations(); len(ids) != 2 || ids[1] != "op-2" || !without || tr.Starts != 3 {
		t.Errorf("operations %v (a run without: %v), %d starts; want op-1, op-2, a run without, and 3 starts", ids, without, tr.Starts)
	}
}
