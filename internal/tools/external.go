package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	shlex "github.com/anmitsu/go-shlex"

	"github.com/sshrig/sshrig/internal/procs"
	"github.com/sshrig/sshrig/tool"
)

// ExternalPrefix starts the name of a tool that is an external program.
const ExternalPrefix = "exec:"

// External is a tool run as a separate program: the rig passes the target
// in SSHRIG_* variables (docs/tool-contract.md) and reads the result from its
// stdout. The program runs in its own process group, which is killed when
// the rig gives up on it and, afterwards, in any case: nothing it started
// outlives its case.
type External struct {
	Argv []string
	// OutputGrace is how long the rig waits, after the program exited, for
	// processes it started to release its stdout and stderr. Default 500ms.
	OutputGrace time.Duration
}

// ParseExternal parses "exec:COMMAND ARGS…" (POSIX shell quoting). An
// argument may hold placeholders ({host}, {port}, {user}, {identity},
// {known_hosts}, {command}, … as tool.Placeholders lists), filled for each
// case: each stays within its one argument, whatever its value holds, so
// `exec:ssh -p {port} -i {identity} {user}@{host} {command}` runs OpenSSH's
// client itself with no wrapper.
func ParseExternal(spec string) (External, error) {
	rest, ok := strings.CutPrefix(spec, ExternalPrefix)
	if !ok {
		return External{}, fmt.Errorf("tools: %q does not start with %q", spec, ExternalPrefix)
	}
	argv, err := shlex.Split(rest, true)
	if err != nil {
		return External{}, fmt.Errorf("tools: %q: %v", spec, err)
	}
	if len(argv) == 0 {
		return External{}, fmt.Errorf("tools: %q names no program", spec)
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return External{}, fmt.Errorf("tools: %q: %v", spec, err)
	}
	return External{Argv: argv}, nil
}

// argv is the command line for t: every placeholder filled, each argument
// still one argument.
func (e External) argv(t tool.Target) []string {
	argv := make([]string, len(e.Argv))
	for i, a := range e.Argv {
		argv[i] = t.Fill(a)
	}
	return argv
}

// Name implements tool.Tool.
func (e External) Name() string { return ExternalPrefix + strings.Join(e.Argv, " ") }

// Run implements tool.Tool.
func (e External) Run(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
	e.RunProcess(ctx, t, stdout, stderr, nil)
}

// RunProcess implements tool.Process.
func (e External) RunProcess(ctx context.Context, t tool.Target, stdout, stderr io.Writer, started func(pid int)) tool.ProcessExit {
	grace := e.OutputGrace
	if grace <= 0 {
		grace = 500 * time.Millisecond
	}
	argv := e.argv(t)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), t.Environ()...)
	cmd.Stdin = nil // /dev/null
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	killed := false
	cmd.Cancel = func() error {
		killed = true
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	// After the program exits, its children may still hold its output
	// open; Wait gives up on them after the grace.
	cmd.WaitDelay = grace
	out := tool.ProcessExit{ExitCode: -1}
	if err := t.Start(cmd.Start); err != nil {
		out.StartErr = err.Error()
		return out
	}
	out.PID = cmd.Process.Pid
	if started != nil {
		started(out.PID)
	}
	err := cmd.Wait()
	// Whatever is left of the process group is the tool's leftover: record
	// it, then kill it.
	out.LeftRunning = procs.Group(out.PID)
	syscall.Kill(-out.PID, syscall.SIGKILL)
	out.Killed = killed
	var ee *exec.ExitError
	switch {
	case cmd.ProcessState != nil:
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			out.Signal = ws.Signal().String()
		} else {
			out.ExitCode = ws.ExitStatus()
		}
	case errors.As(err, &ee):
		out.ExitCode = ee.ExitCode()
	}
	return out
}
