package engine

import (
	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/reconcile"
)

// ExpectTruth is the remote truth a cut of kind cut at moment m implies for a
// marker-wrapped command with disposition d, when the command itself is short.
// The rig's own tests hold the server to it; a case whose measured truth
// differs shows the rig misbehaving, not the tool.
func ExpectTruth(m fault.Moment, cut fault.Cut, d fault.Disposition) reconcile.State {
	if !m.RunsCommand() {
		return reconcile.NotStarted
	}
	// A blackhole leaves the server's transport up until the case ends, so a
	// hangup never fires before the command is done.
	dropped := m != fault.None && cut.DropsTransport()
	switch {
	case m == fault.Exec && (cut == fault.ServerCrash || cut == fault.Reboot):
		// The server that would have started it is gone.
		return reconcile.NotStarted
	case (m == fault.Started || m == fault.Output) && cut == fault.Reboot:
		// A reboot kills every process, whatever the disposition.
		return reconcile.Started
	}
	switch d {
	case fault.RemoteKill:
		return reconcile.Started
	case fault.Hangup:
		switch {
		case m == fault.Exec && dropped:
			return reconcile.NotStarted
		case (m == fault.Started || m == fault.Output) && dropped:
			return reconcile.Started
		}
	}
	return reconcile.Completed
}
