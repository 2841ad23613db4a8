package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

func newExecCmd() *cobra.Command {
	var t tool.Target
	var deadline time.Duration
	var show bool
	cmd := &cobra.Command{
		Use:   "exec",
		Short: "Run one command over SSH with the reference client and print its result",
		Long: `exec runs one command over SSH with sshrig's reference client
(golang.org/x/crypto/ssh, host key pinned through known_hosts, per-phase
deadlines, keepalives) and prints one result object (docs/result.schema.json)
on stdout. Diagnostics go to stderr.

Every flag defaults to the matching SSHRIG_* environment variable, which is
how the rig passes a case to an external tool: 'sshrig run --tool "exec:sshrig
exec"' tests the reference client as an external program.

Exit codes: 0 the command succeeded, 1 any other result (see its category),
2 bad usage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if deadline > 0 {
				t.Deadline = deadline
			}
			if err := checkTarget(t); err != nil {
				return usageError("exec: %v", err)
			}
			if show {
				fmt.Fprintf(cmd.ErrOrStderr(), "deadlines: %+v\n", tools.DeadlinesFor(t.Deadline))
			}
			out := &lastLine{w: cmd.OutOrStdout()}
			tools.Reference{}.Run(cmd.Context(), t, out, cmd.ErrOrStderr())
			r, err := result.Parse(out.last)
			if err != nil || r.Category != result.Succeeded {
				return &exitError{code: exitFail, err: fmt.Errorf("")}
			}
			return nil
		},
	}
	// The rig passes a case in SSHRIG_* variables; flags override them, and
	// checkTarget names whatever neither gave.
	t, _ = tool.FromEnv(os.Getenv)
	f := cmd.Flags()
	for _, fl := range []struct {
		p         *string
		name, env string
		usage     string
	}{
		{&t.Addr, "addr", tool.EnvAddr, "host:port of the SSH server"},
		{&t.User, "user", tool.EnvUser, "user name"},
		{&t.Identity, "identity", tool.EnvIdentity, "private key file"},
		{&t.Certificate, "certificate", tool.EnvCertificate, "OpenSSH user certificate for the identity, if any"},
		{&t.KnownHosts, "known-hosts", tool.EnvKnownHosts, "known_hosts file pinning the host key"},
		{&t.CorrelationID, "correlation-id", tool.EnvCorrelationID, "id echoed in the result"},
		{&t.Operation, "operation", tool.EnvOperation, "operation name echoed in the result"},
		{&t.Command, "command", tool.EnvCommand, "remote command"},
		{&t.Reconcile, "reconcile-command", tool.EnvReconcile, "reconcile probe to run after an unknown outcome, if any"},
	} {
		f.StringVar(fl.p, fl.name, *fl.p, fl.usage+" ($"+fl.env+")")
	}
	f.DurationVar(&deadline, "deadline", t.Deadline, "budget for the whole attempt ($"+tool.EnvDeadlineMS+")")
	f.BoolVar(&show, "show-deadlines", false, "print the per-phase deadlines derived from the budget on stderr")
	return cmd
}

func checkTarget(t tool.Target) error {
	for _, f := range []struct{ name, v string }{
		{"--addr", t.Addr}, {"--user", t.User}, {"--identity", t.Identity}, {"--known-hosts", t.KnownHosts},
		{"--correlation-id", t.CorrelationID}, {"--operation", t.Operation}, {"--command", t.Command},
	} {
		if f.v == "" {
			return fmt.Errorf("%s is required (or its SSHRIG_* variable)", f.name)
		}
	}
	if t.Deadline <= 0 {
		return fmt.Errorf("--deadline must be positive")
	}
	return nil
}

// lastLine passes writes through and keeps the last line written.
type lastLine struct {
	w    interface{ Write([]byte) (int, error) }
	last []byte
}

func (l *lastLine) Write(p []byte) (int, error) {
	l.last = append([]byte(nil), p...)
	return l.w.Write(p)
}
