package engine

import (
	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/evidence"
	"github.com/sshrig/sshrig/internal/verdict"
)

// VerdictInput is what a case run's evidence says for its verdict, the
// case run having correlation id and being cut at moment m with cut c
// (evs is its events, read once): whether the cut landed, how often the
// command was sent, what the caller could know and could have received,
// what a cut upload left on the host, and the truth.
// The rig's run (for a tool) and sshrigtest's held operations (for a
// test's own client) both start from it and add what only they know.
func (ev *Evidence) VerdictInput(evs evidence.Case, id string, m fault.Moment, c fault.Cut) verdict.Input {
	in := verdict.Input{
		Moment:            m,
		Cut:               c,
		CorrelationID:     id,
		NoConnection:      !evs.Connected(),
		Landed:            ev.Landed,
		NotLanded:         ev.NotLanded,
		Attempts:          evs.Attempts(),
		CredentialRetries: evs.CredentialRetries(),
		Upload:            evs.Upload(),
	}
	knowledge := fault.KnowledgeAt(m, c)
	if knowledge == fault.NothingSent && ev.Cut != nil && evs.AttemptedOn(ev.Cut.Held()) {
		// What crossed the wire outranks the moment's name: a client that
		// pipelines its requests (OpenSSH sends env and pty-req without
		// waiting for replies, its exec right behind) had sent the
		// workload's request before a cut "after env", and the server
		// received it, so it may run. Only bytes sent before the cut reach
		// the server on a cut connection.
		knowledge = fault.RequestSent
	}
	in.Knowledge = knowledge
	in.OperationIDs = evs.OperationIDs()
	if in.Attempts > 1 {
		in.ResendDelivered = evs.ResendDelivered()
	}
	if knowledge == fault.NothingSent && m.HasCut() {
		// A caller that went on after a cut where nothing was sent is
		// judged by what its new attempt got.
		in.FreshDelivered = evs.LastDelivered()
	}
	// A status a helper relayed (kill-helper at exit-status) counts as
	// received when it was delivered.
	if knowledge == fault.ResultReceived || (m == fault.ExitStatus && c.HelperCut()) {
		in.Delivered = evs.Delivered()
	}
	// A workload that ran inside a wrapper of the tool's that captured its
	// output (a module that prints it with a status of its own) and
	// finished before the cut: when every byte the server wrote had reached
	// the tool, so had whatever the wrapper printed, its status included.
	// A wrapper that lets the workload write straight to the session (sh
	// FILE) prints no status: a tool that reports one guessed.
	if m == fault.Finished && ev.Landed && ev.Cut != nil && !ev.Cut.Discarded() && ev.Cut.Delivered >= ev.Cut.Sent && ev.Truth.OutputCaptured() {
		in.OutputDelivered = true
	}
	if ev.ProbeErr != "" {
		in.TruthErr = ev.ProbeErr
	} else {
		truth := ev.Truth
		in.Truth = &truth
	}
	return in
}
