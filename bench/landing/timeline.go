package main

import (
	"fmt"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
)

// moments are the moments the benchmark measures, in the workload's order.
var moments = []fault.Moment{fault.Exec, fault.Started, fault.Output, fault.Finished, fault.ExitStatus}

// Window is where a moment lies on the server's timeline: from the server's
// MomentReached event for it to the event of the workload's next step (see
// windowEnd). End is zero when the next step never happened.
type Window struct {
	Moment fault.Moment `json:"moment"`
	Conn   int          `json:"conn"` // the connection the moment was reached on
	Start  time.Time    `json:"start"`
	End    time.Time    `json:"end,omitzero"`
}

// Width is the window's width, or 0 when it never closed.
func (w Window) Width() time.Duration {
	if w.End.IsZero() {
		return 0
	}
	return w.End.Sub(w.Start)
}

// endsWindow reports whether e is the event that closes moment m's window:
// the next moment of the workload, and for exit-status the channel's close
// (the server's exec_finished, emitted right after it closed the channel).
func endsWindow(m fault.Moment, e control.Event) bool {
	next := map[fault.Moment]fault.Moment{
		fault.Exec:     fault.Started,
		fault.Started:  fault.Output,
		fault.Output:   fault.Finished,
		fault.Finished: fault.ExitStatus,
	}
	if m == fault.ExitStatus {
		return e.Kind == control.ExecFinished
	}
	return e.Kind == control.MomentReached && e.Moment == next[m]
}

// windowOf finds moment m's window in a case's events (in server order). It
// reports false when the server never reached m.
func windowOf(events []control.Event, m fault.Moment) (Window, bool) {
	w := Window{Moment: m}
	found := false
	for _, e := range events {
		if !found {
			if e.Kind == control.MomentReached && e.Moment == m {
				w.Start, w.Conn, found = e.Time, e.Conn, true
			}
			continue
		}
		if endsWindow(m, e) {
			w.End = e.Time
			break
		}
	}
	return w, found
}

// Verdict says where a cut took effect relative to its moment's window.
type Verdict string

const (
	Hit   Verdict = "hit"   // inside the window
	Early Verdict = "early" // before the window opened, or the moment was never reached
	Late  Verdict = "late"  // at or after the window closed, or never
	// Unconfirmed: the effect's time is known but the effect itself could
	// not be confirmed (a timeout toxic that let a later byte through).
	Unconfirmed Verdict = "unconfirmed"
)

// Effect is when, on the server's clock, a cut took effect. Zero At: it
// never did while the workload ran.
type Effect struct {
	At time.Time `json:"at,omitzero"`
	// Unconfirmed, when set, says why the effect could not be confirmed.
	Unconfirmed string `json:"unconfirmed,omitempty"`
}

// judge is the one definition of a hit: the cut took effect at or after the
// moment's MomentReached event and before the event that ends its window.
// ok is whether the server reached the moment at all. A hit whose effect
// could not be confirmed is Unconfirmed.
func judge(w Window, ok bool, eff Effect) Verdict {
	switch {
	case !ok && eff.At.IsZero():
		return Late // neither the moment nor the cut happened: nothing landed
	case !ok:
		return Early // the cut ended the exchange before the moment
	case eff.At.IsZero():
		return Late
	case eff.At.Before(w.Start):
		return Early
	case !w.End.IsZero() && !eff.At.Before(w.End):
		return Late
	case eff.Unconfirmed != "":
		return Unconfirmed
	}
	return Hit
}

// lossOf is the server's own view of a transport cut: the first
// transport_lost event of connection conn that the server did not cause
// itself, at or after notBefore.
func lossOf(events []control.Event, conn int, notBefore time.Time) (time.Time, bool) {
	for _, e := range events {
		if e.Kind == control.TransportLost && e.Conn == conn && e.Detail != "closed by server" && !e.Time.Before(notBefore) {
			return e.Time, true
		}
	}
	return time.Time{}, false
}

// sentBy is how many bytes the server had written on connection conn by its
// first moment event at or after t (moment events carry the count); false
// when there is none.
func sentBy(events []control.Event, conn int, t time.Time) (int64, bool) {
	for _, e := range events {
		if e.Kind == control.MomentReached && e.Conn == conn && !e.Time.Before(t) {
			return e.Sent, true
		}
	}
	return 0, false
}

// blackholeEffect is when a timeout toxic took effect: when Toxiproxy
// answered that it was installed, confirmed by the tool having read no byte
// the server wrote after that instant. The tool's byte count is compared
// with the server's at its first moment after the installation; past the
// last moment the server writes only the channel's close, so there the
// confirmation is that the tool never saw its session close.
func blackholeEffect(events []control.Event, conn int, installed time.Time, toolRead int64, toolSawClose bool) Effect {
	if installed.IsZero() {
		return Effect{}
	}
	eff := Effect{At: installed}
	sent, ok := sentBy(events, conn, installed)
	switch {
	case ok && toolRead > sent:
		eff.Unconfirmed = fmt.Sprintf("the tool read %d bytes; the server had written %d by its first moment after the toxic's installation", toolRead, sent)
	case !ok && toolSawClose:
		eff.Unconfirmed = "the tool saw its session close, which the server wrote after its last moment"
	}
	return eff
}
