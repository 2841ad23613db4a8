package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/reconcile"
)

// Case is the server's events of one case, read for the marker id the
// case's workload carries.
type Case struct {
	events []control.Event
	id     string
}

// Of reads events, in the server's order, for the case whose markers carry id.
func Of(events []control.Event, id string) Case { return Case{events: events, id: id} }

// Session is the one key every question uses: a session channel of a
// connection, as the server numbers them.
type Session struct{ Conn, Session int }

// SessionOf is the session an event belongs to.
func SessionOf(e control.Event) Session { return Session{e.Conn, e.Session} }

// Digest is a command's digest as the server's exec events carry it and
// the rig's event log records it.
func Digest(cmd string) string {
	sum := sha256.Sum256([]byte(cmd))
	return hex.EncodeToString(sum[:])
}

// digestOrNone is Digest, or "" for no command: an event's digest is never "".
func digestOrNone(cmd string) string {
	if cmd == "" {
		return ""
	}
	return Digest(cmd)
}

func deliveredBy(e control.Event) *verdict.Delivered {
	d := &verdict.Delivered{Signal: e.Signal}
	if e.ExitCode != nil {
		d.ExitCode = *e.ExitCode
	}
	return d
}

// Steps classifies, in the server's order, the commands the tool ran
// for a step sequence: the create (by its marker id), the lookup, the case's
// reconcile probe (a lookup too: it reads and changes nothing) and the note
// on the true record (by digest); anything else is unknown. A lookup found
// the record when a create had exited 0 before it arrived. A lookup or a
// note whose request the case's moment held (a cut in that call,
// matrix.Case.Call) is Lost: its answer never reached the tool. probed
// says a lookup ran between the first create and a later one.
func (c Case) Steps(lookupCmd, noteCmd, reconcileCmd string) (steps []verdict.Step, probed bool) {
	lookup, note, probe := Digest(lookupCmd), Digest(noteCmd), digestOrNone(reconcileCmd)
	createPIDs := map[int]Session{}
	creating := map[Session]bool{}
	// unsettled: creates that could still run — the request held, or the
	// command running. A lookup meanwhile finds nothing for now only.
	unsettled := map[Session]bool{}
	created := false
	called := map[Session]int{} // the step of each lookup and note, by session
	ws := c.workloadSessions()
	for _, e := range c.events {
		k := SessionOf(e)
		switch e.Kind {
		case control.ExecReceived:
			switch {
			case len(steps) == 0 && !c.isAttempt(e, ws):
				// Preparation (an upload by scp -t, a probe such as
				// uname -s) is no step of the sequence.
			case c.isAttempt(e, ws):
				steps = append(steps, verdict.Step{Op: verdict.StepCreate})
				creating[k], unsettled[k] = true, true
			case e.Digest == lookup, probe != "" && e.Digest == probe:
				called[k] = len(steps)
				steps = append(steps, verdict.Step{Op: verdict.StepLookup, Found: created, Pending: !created && len(unsettled) > 0})
			case e.Digest == note:
				called[k] = len(steps)
				steps = append(steps, verdict.Step{Op: verdict.StepNote})
			default:
				steps = append(steps, verdict.Step{Op: verdict.StepUnknown})
			}
		case control.ProcSpawned:
			if creating[k] {
				createPIDs[e.PID] = k
			}
		case control.ProcExited:
			if ck, ok := createPIDs[e.PID]; ok {
				delete(unsettled, ck)
				if e.ExitCode != nil && *e.ExitCode == 0 {
					created = true
				}
			}
		case control.ExecSkipped, control.ExecFinished, control.ExecRefused:
			delete(unsettled, k)
		case control.MomentReached:
			if i, ok := called[k]; ok && e.Hold {
				steps[i].Lost = true
			}
		}
	}
	seenCreate, lookedUp := false, false
	for _, s := range steps {
		switch s.Op {
		case verdict.StepCreate:
			if seenCreate && lookedUp {
				probed = true
			}
			seenCreate = true
		case verdict.StepLookup:
			lookedUp = seenCreate
		}
	}
	return steps, probed
}

// FollowUps counts exec requests, after the operation's own command first
// arrived, other than that command and the case's reconcile probe
// (reconcileCmd, when not empty). What came before (an upload by scp -t, a
// probe such as uname -s) cannot have been built on the answer.
func (c Case) FollowUps(reconcileCmd string) int {
	probe := digestOrNone(reconcileCmd)
	n := 0
	ws := c.workloadSessions()
	seen := false
	for _, e := range c.events {
		if e.Kind != control.ExecReceived {
			continue
		}
		attempt := c.isAttempt(e, ws)
		if seen && !attempt && (probe == "" || e.Digest != probe) {
			n++
		}
		seen = seen || attempt
	}
	return n
}

// CredentialRetries counts the connections, beyond the first, on which the
// server rejected a key.
func (c Case) CredentialRetries() int {
	conns := map[int]bool{}
	for _, e := range c.events {
		if e.Kind == control.AuthRejected {
			conns[e.Conn] = true
		}
	}
	return max(0, len(conns)-1)
}

// CredentialTested says why a credential case tested nothing: the events
// must show the credential accepted (at set-up) before it was rejected.
func (c Case) CredentialTested() string {
	accepted := false
	for _, e := range c.events {
		switch e.Kind {
		case control.AuthAccepted:
			accepted = true
		case control.AuthRejected:
			if !accepted {
				return "the credential was rejected before it was ever accepted: a credential that never worked tests nothing"
			}
			return ""
		}
	}
	if !accepted {
		return "the server never accepted the case's credential at set-up"
	}
	return "" // accepted and never rejected: the tool's report is judged as it is
}

// PastKeyExchange says how far past the key exchange a connection of the
// case got ("" if none did): a client reaches user authentication only
// after it accepted the server's host key.
func (c Case) PastKeyExchange() string {
	past := ""
	for _, e := range c.events {
		switch e.Kind {
		case control.AuthAccepted:
			return "it authenticated (" + e.Detail + ")"
		case control.AuthRejected:
			past = "it offered a credential (" + e.Detail + ")"
		}
	}
	return past
}

// Attempts counts the exec requests carrying id's markers that reached the
// server, run or refused.
func (c Case) Attempts() int { return c.attemptsOn(anyConn) }

// AttemptedOn says whether an attempt at the case's workload (as Attempts
// counts them) reached the server on connection conn.
func (c Case) AttemptedOn(conn int) bool { return c.attemptsOn(conn) > 0 }

// anyConn makes attemptsOn count the attempts on every connection.
const anyConn = -1

// attemptsOn counts the exec requests that were attempts at the case's
// workload, run or refused, on connection conn (anyConn: on any).
func (c Case) attemptsOn(conn int) int {
	n := 0
	ws := c.workloadSessions()
	for _, e := range c.events {
		if (conn == anyConn || e.Conn == conn) && (e.Kind == control.ExecReceived || e.Kind == control.ExecRefused) && c.isAttempt(e, ws) {
			n++
		}
	}
	return n
}

// ProbedBetween says every attempt after the first was reconciled by the
// probe whose Digest is probe:
// since the attempt before it, the case's reconcile probe (by its digest) ran
// to its exit status at a time when every earlier attempt's exec request had
// ended without the server starting the command. Only then can the probe's
// "not started" be true for good; a probe that ran while an earlier request
// was still held (it could start after the probe looked), or after the
// command had started, justifies nothing. A refused probe ran nothing.
func (c Case) ProbedBetween(probe string) bool {
	type attempt struct{ ended, spawned bool }
	tries := map[Session]*attempt{}
	probes := map[Session]bool{}
	order, reconciled := 0, false
	settled := func() bool { // every attempt so far ended and never started
		for _, a := range tries {
			if !a.ended || a.spawned {
				return false
			}
		}
		return true
	}
	ws := c.workloadSessions()
	for _, e := range c.events {
		k := SessionOf(e)
		switch e.Kind {
		case control.CaseAdopted:
			// The host restarted: an attempt's request of the boot before
			// ended with it, whether or not it started.
			for _, a := range tries {
				a.ended = true
			}
		case control.ExecReceived, control.ExecRefused:
			switch {
			case c.isAttempt(e, ws):
				if order > 0 && !reconciled {
					return false
				}
				order++
				reconciled = false
				tries[k] = &attempt{ended: e.Kind == control.ExecRefused}
			case e.Kind == control.ExecReceived && e.Digest == probe && order > 0:
				probes[k] = true
			}
		case control.ProcSpawned:
			if a := tries[k]; a != nil {
				a.spawned = true
			}
		case control.ExecSkipped, control.ExecFinished:
			if a := tries[k]; a != nil {
				a.ended = true
			}
		case control.ExitSent:
			if probes[k] && settled() {
				reconciled = true
			}
		}
	}
	return order > 1
}

// LastDelivered is what the server delivered to the last attempt for id
// (its exec request's session), nil when it delivered nothing.
func (c Case) LastDelivered() *verdict.Delivered {
	var last Session
	var got *verdict.Delivered
	ws := c.workloadSessions()
	for _, e := range c.events {
		k := SessionOf(e)
		switch {
		case (e.Kind == control.ExecReceived || e.Kind == control.ExecRefused) && c.isAttempt(e, ws):
			last, got = k, nil
		case e.Kind == control.ExitSent && k == last:
			got = deliveredBy(e)
		}
	}
	return got
}

// ResendDelivered is what the server delivered to the last attempt for id
// when that attempt ran the work itself (its process tree passed the start
// gate with the case's markers): the result of the one run of the work a
// tool that sent the command again under its operation id then holds. Nil
// when nothing was delivered, or the last attempt ran no work (a run
// de-duplicated by its operation id stops before its start gate).
func (c Case) ResendDelivered() *verdict.Delivered {
	var last Session
	var got *verdict.Delivered
	ran := false
	ws := c.workloadSessions()
	for _, e := range c.events {
		k := SessionOf(e)
		switch {
		case (e.Kind == control.ExecReceived || e.Kind == control.ExecRefused) && c.isAttempt(e, ws):
			last, got, ran = k, nil, false
		case e.Kind == control.ProcStartGate && e.MarkerID == c.id && k == last:
			ran = true
		case e.Kind == control.ExitSent && k == last:
			got = deliveredBy(e)
		}
	}
	if !ran {
		return nil
	}
	return got
}

// OperationIDs lists, in arrival order, the operation id set in front of
// each attempt that arrived as a marker-wrapped exec request
// (markers.WithOperationID), "" where none was: what the wire says of each.
// An attempt that arrived otherwise (on a shell's stdin, in an uploaded
// file) is not listed; its markers say its id.
func (c Case) OperationIDs() []string {
	var ids []string
	for _, e := range c.events {
		if (e.Kind == control.ExecReceived || e.Kind == control.ExecRefused) && e.MarkerID == c.id {
			ids = append(ids, e.OperationID)
		}
	}
	return ids
}

// Delivered is the result the server delivered for the workload: the exit
// status sent on the session of the first attempt at it (see isAttempt)
// (the first such request), not that of a probe or cleanup command the tool
// ran before or after it. Nil when none was sent.
func (c Case) Delivered() *verdict.Delivered {
	var workload *Session
	ws := c.workloadSessions()
	for _, e := range c.events {
		k := SessionOf(e)
		switch {
		case workload == nil && (e.Kind == control.ExecReceived || e.Kind == control.ExecRefused) && c.isAttempt(e, ws):
			workload = &k
		case e.Kind == control.ExitSent && workload != nil && k == *workload:
			return deliveredBy(e)
		}
	}
	return nil
}

// Settled reports whether every exec request the server received is
// finished and every process it spawned has exited.
func Settled(events []control.Event) bool {
	execs, procs := 0, 0
	for _, e := range events {
		switch e.Kind {
		case control.CaseAdopted:
			// The host restarted: nothing from before it runs.
			execs, procs = 0, 0
		case control.ExecReceived:
			execs++
		case control.ExecFinished:
			execs--
		case control.ProcSpawned:
			procs++
		case control.ProcExited:
			procs--
		}
	}
	return execs == 0 && procs == 0
}

// Connected reports whether any connection reached the server (with a valid
// preamble) as the target: a case's jump host is not its target.
func Connected(events []control.Event) bool {
	for _, e := range events {
		if e.Kind == control.ConnAccepted && e.Detail != control.JumpHostConn {
			return true
		}
	}
	return false
}

// Connected reports whether any connection reached the server, of any
// case (the events Of was given).
func (c Case) Connected() bool { return Connected(c.events) }

// ConnectionsAfter counts the connections that reached the server as the
// target after t, by the server's own clock: after a person refused an
// agent's approval, nothing of the case may connect.
func (c Case) ConnectionsAfter(t time.Time) int {
	n := 0
	for _, e := range c.events {
		if e.Kind == control.ConnAccepted && e.Detail != control.JumpHostConn && e.Time.After(t) {
			n++
		}
	}
	return n
}

// ProcessGroups lists the process groups the server spawned, in order.
func ProcessGroups(events []control.Event) []int {
	var pgids []int
	for _, e := range events {
		if e.Kind == control.ProcSpawned {
			pgids = append(pgids, e.PID)
		}
	}
	return pgids
}

// Received counts the exec requests carrying the case's markers that the
// server received (refused ones included: they arrived).
func (c Case) Received() int {
	n := 0
	for _, e := range c.events {
		if e.Kind == control.ExecReceived && e.MarkerID == c.id {
			n++
		}
	}
	return n
}

// Processes lists the processes the server ran for the case's markers, in
// spawn order: the server's own evidence for reconcile.Derive. A process is
// the case's when its session's exec request carried the case's markers, or
// when its process tree passed the start gate with them — a workload that
// arrived on a shell's stdin or in a file uploaded earlier. Its PID is the
// shell that wrote the markers (the ledger's pid), which may be a descendant
// of the process the server started; its exit is that process's.
func (c Case) Processes() []reconcile.Process {
	marker := map[Session]string{}
	var order []*reconcile.Process
	// By the pid the server started, within one boot of the host: a pid
	// after a restart (CaseAdopted) is another process's.
	procs := map[int]*reconcile.Process{}
	track := func(pid int) *reconcile.Process {
		if procs[pid] == nil {
			procs[pid] = &reconcile.Process{PID: pid}
			order = append(order, procs[pid])
		}
		return procs[pid]
	}
	for _, e := range c.events {
		k := SessionOf(e)
		switch e.Kind {
		case control.CaseAdopted:
			// Every process of the boot before died with it, by the
			// SIGKILL a PID namespace's end sends to all of its processes.
			for _, p := range procs {
				if !p.Exited {
					p.Exited, p.Signal = true, "KILL"
				}
			}
			procs = map[int]*reconcile.Process{}
		case control.ExecReceived:
			marker[k] = e.MarkerID
		case control.ProcSpawned:
			if marker[k] == c.id {
				track(e.PID)
			}
		case control.ProcStartGate:
			p := procs[e.PID]
			if p == nil && e.MarkerID == c.id {
				p = track(e.PID)
			}
			if p != nil {
				p.ReachedStart = true
				if e.MarkerPID != 0 {
					p.Nested = p.Nested || e.MarkerPID != e.PID
					p.OutputCaptured = p.OutputCaptured || e.OutputCaptured
					p.PID = e.MarkerPID
				}
			}
		case control.ProcExited:
			if p := procs[e.PID]; p != nil {
				p.Exited, p.ExitCode, p.Signal = true, e.ExitCode, e.Signal
			}
		}
	}
	out := make([]reconcile.Process, 0, len(order))
	for _, p := range order {
		out = append(out, *p)
	}
	return out
}

// Foreign is another case's command that arrived on one of this case's
// connections: the mark of a tool that carries connections across cases.
type Foreign struct {
	MarkerID string // the other case's correlation id
	Conn     int    // this case's connection it arrived on
}

// Foreign lists, once per other correlation id and in arrival order, the
// commands carrying another case's markers that this case's connections
// delivered.
func (c Case) Foreign() []Foreign {
	var out []Foreign
	seen := map[string]bool{}
	for _, e := range c.events {
		if e.Kind == control.ExecReceived && e.MarkerID != "" && e.MarkerID != c.id && !seen[e.MarkerID] {
			seen[e.MarkerID] = true
			out = append(out, Foreign{MarkerID: e.MarkerID, Conn: e.Conn})
		}
	}
	return out
}

// workloadSessions are the sessions that carried an attempt at the case's
// workload: those whose process tree passed the start gate with the case's
// markers, and the one whose request the server held at the exec moment as
// the workload's (a shell request cut there never shows its commands). That
// covers a workload whatever path it arrived by: in an exec request, on a
// shell's stdin, or in a file uploaded earlier and run by a command that does
// not itself carry the markers.
func (c Case) workloadSessions() map[Session]bool {
	ws := map[Session]bool{}
	for _, e := range c.events {
		switch {
		case e.Kind == control.ProcStartGate && e.MarkerID == c.id,
			e.Kind == control.MomentReached && e.Moment == fault.Exec && e.Hold && !e.HeldCall:
			ws[SessionOf(e)] = true
		}
	}
	return ws
}

// isAttempt says whether e, an exec or shell request the server received or
// refused, is an attempt at the case's workload: its command carries the
// case's markers, or its session ran the workload (ws, workloadSessions).
// One session carries at most one exec or shell request.
func (c Case) isAttempt(e control.Event, ws map[Session]bool) bool {
	return e.MarkerID == c.id || (e.Kind == control.ExecReceived && ws[SessionOf(e)])
}
