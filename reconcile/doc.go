// Package reconcile establishes what really happened remotely in a case run.
//
// Two independent sources are read: the markers ledger (what the marker-wrapped
// command wrote before and after its work), read over SSH (by a [Follower] on
// the rig's probe connection, or a session of its own), and
// the server's own process events (which processes it ran for the case, whether
// each stopped at its start gate, how each ended). Derive combines them into a
// truth state — not_started, started, running or completed with an exit code —
// and reports a disagreement when the two sources contradict each other; the
// rig then judges the case inconclusive instead of trusting either source.
package reconcile
