package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes (see docs/cli.md).
const (
	exitPass      = 0 // every case passed
	exitFail      = 1 // a verdict failed
	exitUsage     = 2 // bad usage or input
	exitRigFailed = 3 // the rig could not run (infrastructure, inconclusive preflight)
	// exitInterrupted is a run stopped by Ctrl-C (SIGINT) or SIGTERM, after
	// it wrote the report of what it judged: 128 + SIGINT, as shells say.
	exitInterrupted = 130
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func rigError(err error) error { return &exitError{code: exitRigFailed, err: err} }

// run is the whole CLI; only main exits.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitPass
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintf(stderr, "sshrig: %v\n", ee.err)
		}
		return ee.code
	}
	// Anything cobra itself rejects (unknown command or flag, bad value) is
	// usage; the help named is the command's that rejected it.
	fmt.Fprintf(stderr, "sshrig: %v\n", err)
	path := "sshrig"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", path)
	return exitUsage
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "sshrig",
		Short: "SSH interruption test rig",
		Long: `sshrig proves, case by case, whether a tool that runs commands over SSH tells
the truth when the connection dies at an exact moment of the exchange.

An SSH server runs marker-writing commands; a local cutter kills the tool's
transport exactly when the server reaches the case's moment; probes read the
markers to learn what really happened; a verdict compares that with what the
tool reported.

Exit codes: 0 all passed, 1 a verdict failed, 2 bad usage or input,
3 the rig could not run.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.CompletionOptions.DisableDefaultCmd = false // sshrig completion bash|zsh|fish|powershell
	root.AddCommand(newRunCmd(), newCasesCmd(), newToolsCmd(), newExecCmd(), newVerifyCmd(), newServeCmd())
	root.AddCommand(newGCCmd())
	root.AddCommand(newAgentCmd()) // agent.go
	root.AddCommand(newReconcileCmd())
	root.AddCommand(nightlyCommands()...) // nightly.go
	return root
}
