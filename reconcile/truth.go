package reconcile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sshrig/sshrig/markers"
)

// State is what the probes established about the operation's command.
type State string

const (
	NotStarted State = "not_started" // no execution began
	Started    State = "started"     // began, never completed, no longer running
	Running    State = "running"     // began, still running at probe time
	Completed  State = "completed"   // ran to completion; see ExitCode
)

// States returns every truth state.
func States() []State { return []State{NotStarted, Started, Running, Completed} }

// Process is what the server saw of one process it ran for a marker id.
type Process struct {
	PID int
	// ReachedStart: the wrapper stopped at its start gate, right after writing
	// its start marker.
	ReachedStart bool
	// Exited: the server reaped it. ExitCode is set for a normal exit, Signal
	// when a signal killed it.
	Exited   bool
	ExitCode *int
	Signal   string
	// Nested: the wrapped command ran inside another process of the session
	// (a module wrapper, sudo, bash -lc, sh FILE): the markers' shell is
	// not the process the server started. Its exit code, or a signal that
	// killed it after the complete marker, is then the wrapper's, not the
	// workload's, and the ledger alone says how the workload ended.
	Nested bool
	// OutputCaptured: nested, and the wrapper captured the workload's
	// output, so whatever the session printed is the wrapper's to say (a
	// status line of its own, as a module prints).
	OutputCaptured bool
}

func (p Process) state() (State, *int) {
	switch {
	case !p.Exited && p.ReachedStart:
		return Running, nil
	case !p.Exited:
		return NotStarted, nil // spawned, not yet at its start marker
	case !p.ReachedStart:
		return NotStarted, nil // ended before its start marker (e.g. no ledger)
	case p.Signal != "":
		return Started, nil
	default:
		return Completed, p.ExitCode
	}
}

// Execution is one run of the wrapped command, as both sources saw it.
type Execution struct {
	PID          int
	Ledger       State // from the markers: started or completed
	LedgerExit   *int
	Server       State // from the process events; "" when the server did not see it
	ServerExit   *int
	ServerSignal string
	// Nested is Process.Nested: the server's exit code and signal are a
	// wrapper's. OutputCaptured is Process.OutputCaptured.
	Nested, OutputCaptured bool
	// OperationID is the operation id the run was given, as its start or
	// dedup marker records it ("" for none). Deduplicated: the run found
	// its operation id already claimed, wrote a dedup marker and did not
	// run the work (its Ledger state is then "").
	OperationID  string
	Deduplicated bool
}

// Truth is the established remote state for one marker id.
type Truth struct {
	ID        string
	State     State
	ExitCode  *int // for Completed
	Starts    int  // start markers: more than one means it ran more than once
	Completes int
	// Dedups counts dedup markers: runs given the operation id of work
	// already started, which did not run it again.
	Dedups int
	// Executions lists each run in order of its start marker, then runs the
	// server saw that left no marker.
	Executions []Execution
	// Disagreement is set when the ledger and the server contradict each
	// other; the state is then not to be trusted.
	Disagreement string
}

// TruthReport is a Truth as reports hold it (report.json of `sshrig run`
// and of `sshrig reconcile`).
type TruthReport struct {
	State        State  `json:"state"`
	Starts       int    `json:"starts"`
	Completes    int    `json:"completes"`
	Dedups       int    `json:"dedups,omitempty"`
	ExitCode     *int   `json:"exit_code"`
	Disagreement string `json:"disagreement,omitempty"`
}

// Report is t as reports hold it.
func (t Truth) Report() *TruthReport {
	return &TruthReport{State: t.State, Starts: t.Starts, Completes: t.Completes, Dedups: t.Dedups, ExitCode: t.ExitCode, Disagreement: t.Disagreement}
}

// OutputCaptured reports whether a run of the wrapped command had its output
// captured by a wrapper of its session (Process.OutputCaptured).
func (t Truth) OutputCaptured() bool {
	for _, x := range t.Executions {
		if x.OutputCaptured {
			return true
		}
	}
	return false
}

// Operations says what the ledger's runs of the command say of operation
// ids: ids are the distinct ids the runs were given, in order of first
// appearance, and without says a run that ran the work was given none. A
// dedup marker always names its id.
func (t Truth) Operations() (ids []string, without bool) {
	for _, x := range t.Executions {
		switch {
		case x.OperationID != "" && !slices.Contains(ids, x.OperationID):
			ids = append(ids, x.OperationID)
		case x.OperationID == "" && x.Ledger != "":
			without = true
		}
	}
	return ids, without
}

// Agree reports whether both sources agree.
func (t Truth) Agree() bool { return t.Disagreement == "" }

func (t Truth) String() string {
	s := string(t.State)
	if t.State == Completed && t.ExitCode != nil {
		s += fmt.Sprintf("(%d)", *t.ExitCode)
	}
	if t.Starts > 1 {
		s += fmt.Sprintf(" x%d", t.Starts)
	}
	return s
}

// Derive combines the ledger's markers for id with the server's processes for
// id. The state is that of the last execution; Starts and Completes count all.
func Derive(id string, ledger *markers.Ledger, procs []Process) Truth {
	t := Truth{ID: id}
	byPID := map[int]*Execution{}
	var order []int
	if ledger != nil {
		for _, e := range ledger.Entries {
			if e.ID != id {
				continue
			}
			x := byPID[e.PID]
			if x == nil {
				x = &Execution{PID: e.PID}
				byPID[e.PID] = x
				order = append(order, e.PID)
			}
			switch e.Kind {
			case markers.Start:
				t.Starts++
				x.OperationID = e.OperationID
				if x.Ledger == "" {
					x.Ledger = Started
				}
			case markers.Dedup:
				t.Dedups++
				x.OperationID, x.Deduplicated = e.OperationID, true
			case markers.Complete:
				t.Completes++
				x.Ledger = Completed
				code := e.ExitCode
				x.LedgerExit = &code
			}
		}
	}
	var problems []string
	for _, p := range procs {
		x := byPID[p.PID]
		if x == nil {
			x = &Execution{PID: p.PID}
			byPID[p.PID] = x
			order = append(order, p.PID)
		}
		x.Server, x.ServerExit = p.state()
		x.ServerSignal, x.Nested, x.OutputCaptured = p.Signal, p.Nested, p.OutputCaptured
	}
	for _, pid := range order {
		x := byPID[pid]
		t.Executions = append(t.Executions, *x)
		if msg := disagreement(*x); msg != "" {
			problems = append(problems, msg)
		}
	}
	t.Disagreement = strings.Join(problems, "; ")

	t.State = NotStarted
	for i := len(t.Executions) - 1; i >= 0; i-- {
		x := t.Executions[i]
		if x.Ledger == "" && (x.Server == NotStarted || x.Deduplicated) {
			continue // a run that never reached its start marker, or ran no work
		}
		t.State, t.ExitCode = x.Ledger, x.LedgerExit
		if x.Ledger == Started && x.Server == Running {
			t.State = Running
		}
		if x.Ledger == "" {
			t.State, t.ExitCode = x.Server, x.ServerExit
		}
		break
	}
	return t
}

func disagreement(x Execution) string {
	switch {
	case x.Server == "" && x.Deduplicated && x.Ledger == "":
		return fmt.Sprintf("pid %d wrote a dedup marker but the server ran no such process for this id", x.PID)
	case x.Server == "":
		return fmt.Sprintf("pid %d wrote markers (%s) but the server ran no such process for this id", x.PID, x.Ledger)
	case x.Deduplicated && x.Ledger == "" && x.Server != NotStarted:
		// A de-duplicated run stops before its start marker and its start
		// gate: the server cannot have seen it start.
		return fmt.Sprintf("pid %d wrote a dedup marker, but the server says %s", x.PID, x.Server)
	case x.Ledger == "" && x.Server == NotStarted:
		return ""
	case x.Ledger == "":
		return fmt.Sprintf("the server saw pid %d %s, but the ledger has no marker from it", x.PID, x.Server)
	case x.Ledger == Started && (x.Server == Started || x.Server == Running):
		return ""
	case x.Ledger == Started && x.Server == NotStarted && x.ServerSignal != "":
		// Killed between its start marker and its start gate (a terminal
		// hung up as it started): the server saw no gate because the
		// signal came first, which is no sign the marker is false.
		return ""
	case x.Nested && x.Ledger == Completed && (x.Server == Completed || x.Server == Started):
		// The workload's wrapper exits as it likes (a module exits 1 for
		// any failure) and may be killed once the workload completed.
		return ""
	case x.Ledger == Completed && x.Server == Completed:
		if x.LedgerExit != nil && x.ServerExit != nil && *x.LedgerExit != *x.ServerExit {
			return fmt.Sprintf("pid %d: the ledger says exit %d, the server saw exit %d", x.PID, *x.LedgerExit, *x.ServerExit)
		}
		return ""
	}
	return fmt.Sprintf("pid %d: the ledger says %s, the server says %s", x.PID, x.Ledger, x.Server)
}
