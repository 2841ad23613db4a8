// Command landing measures, side by side in one process, how often a cut
// lands at its moment: the rig's barrier cutter against a real time-based
// fault injector, Toxiproxy, driven the way its users drive it.
//
//	cd bench && go run ./landing -runs 300 [-hogs 2] [-json] [-trace FILE]
//
// # What runs
//
// One rig server (internal/engine, embedded, on loopback), one in-process
// Toxiproxy API server on 127.0.0.1:0, and a Go SSH client as the tool. Every
// run is one engine case with the same workload,
//
//	printf 'sshrig bench: line one\n'; printf 'sshrig bench: line two\n'
//
// marker-wrapped, disposition survive, OutputBytes the length of the first
// line (so the server announces the output moment after it). The tool's one
// connection goes
//
//	tool ──> Toxiproxy proxy ──> the case's cutter ──> the rig's server
//
// in every run, whoever cuts: Toxiproxy sits between the tool and the cutter
// because the cutter writes the preamble that names the case on every
// upstream connection, so the server can attribute the connection; with
// Toxiproxy there, its toxics act on the tool's side of the pipeline, where
// the rig's own cuts act, and the path is the same for all three injectors.
// Each run gets its own proxy (created and deleted through the API).
//
// The injectors, for each moment in turn, one run each in turn:
//
//   - barrier: the engine's case at the moment with cut reset. The server
//     holds at the moment; the engine resets the connection in its cutter,
//     waits for the server to see its transport drop, and releases the hold.
//   - reset_peer: the engine's case at moment none (no hold, no cut); after
//     a calibrated delay from the tool's start, a reset_peer toxic (timeout
//     0) is added to the proxy's downstream stream (server to tool,
//     Toxiproxy's default) through Toxiproxy's HTTP API with its Go client.
//   - timeout: the same with a timeout toxic: data stops and, 50 ms later,
//     the toxic closes the connection (which only ends the tool; the
//     workload is over by then).
//
// # When a cut lands: one definition
//
// Everything runs in one process, so the server's event times and the times
// the benchmark takes share one clock. A moment's window is an interval on
// the server's own timeline, from its MomentReached event (the server emits
// one for every moment, held or not) to the event of the workload's next
// step:
//
//	exec         MomentReached(exec)        → MomentReached(started)     the start marker
//	started      MomentReached(started)     → MomentReached(output)      the first line reached the channel
//	output       MomentReached(output)      → MomentReached(finished)    the command exited
//	finished     MomentReached(finished)    → MomentReached(exit-status) the exit status was sent
//	exit-status  MomentReached(exit-status) → exec_finished              the channel was closed
//
// A cut hit the moment if it took effect at or after the window's start
// and before its end; before the start (or before the server ever reached
// the moment) it is early, at or after the end (or never) late. What "took
// effect" means, per injector:
//
//   - barrier: the server saw its transport lost (its first transport_lost
//     event on the held connection). The engine's own judgement
//     (Evidence.Landed) must agree with this rule on every run; a
//     disagreement is reported and fails the command and its test.
//   - reset_peer: the server saw its transport lost, on or after the
//     toxic's request. The toxic acts on the next data through the proxy
//     after its installation, and the server learns of it only when the
//     close has travelled back through the proxy and the cutter. A tool
//     that received its session's close was never cut: a loss after that is
//     the tool's own close.
//   - timeout: when Toxiproxy answered that the toxic was installed (it adds
//     a toxic to every live connection of the proxy before it answers),
//     confirmed by the tool having read no byte the server wrote after that
//     instant: the tool's byte count must not exceed the server's count at
//     its first moment after the installation (past the last moment, the
//     tool must not have seen its session close). An unconfirmed hit counts
//     as a miss.
//
// A window's width is its End minus Start in the time-based runs (where
// nothing holds the server); the table gives its p50 and p90.
//
// # The delays
//
// The time-based injectors fire after a delay from the tool's start. It is
// calibrated on earlier runs of the same process: -calibrate runs (default
// 20) through Toxiproxy with a toxic of toxicity 0 (installed, passing
// everything) give the median time of each step of the exchange after the
// tool's start and Toxiproxy's median answer time; then, per moment and
// toxic, a sweep tries as delays each step's median time from four steps
// before the moment to its window's end, the midpoints between them and the
// window's middle, less the answer time, -sweep runs each (default 10), and
// keeps the one with the most hits (ties: nearest the window's middle).
// None of these runs is counted. -sweep 0 skips the sweep and aims at the
// windows' middles.
//
// # Load
//
// -hogs N starts N busy-looping child processes (/bin/sh loops, each in its
// own process group, with a parent-death signal) before anything else and
// kills them at the end, on error and on interrupt; killed outright, the
// benchmark's death kills them too. The report gives the load averages
// before and after.
//
// # Output
//
// A table per moment (hits/runs for each injector, the window's width, the
// delays used), then the misses split into early, late and unconfirmed;
// -json prints the same as JSON, -trace writes every run, calibration and
// sweep included, one JSON object a line. Progress goes to stderr. Exit
// status: 0; 1 when the barrier missed or disagreed with the timeline; 2 for
// bad usage; 3 when the benchmark could not run or was interrupted.
package main
