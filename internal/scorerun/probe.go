package scorerun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/internal/capbuf"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/markers"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/reconcile/score"
	"github.com/sshrig/sshrig/tool"
)

// probeRun is one run of the probe as the runner holds it: what the report
// says of it, and what only the judge reads.
type probeRun struct {
	score.ProbeRun
	stdout []byte // all that was kept, for parsing
	cut    bool   // the probe printed more than was kept
}

// runLocal runs the probe as a local program in its own process group with
// the SSHRIG_* environment of an external tool (t.Environ) plus
// SSHRIG_LEDGER, through tools.External: the same deadline, group kill and
// leftover accounting as a tool under test gets. env(1) adds SSHRIG_LEDGER
// and execs the shell, so the probe's shell still leads the group.
func runLocal(ctx context.Context, probe, ledger string, t tool.Target, timeout time.Duration) probeRun {
	ext := tools.External{Argv: []string{"env", "SSHRIG_LEDGER=" + ledger, "/bin/sh", "-c", probe}}
	stdout, stderr := capbuf.New(reconcile.MaxAnswerSize+1), capbuf.New(maxKept)
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	exit := ext.RunProcess(tctx, t, stdout, stderr, nil)
	pr := probeRun{
		ProbeRun: score.ProbeRun{
			Where:       "local",
			ExitCode:    exit.ExitCode,
			Signal:      exit.Signal,
			Hung:        exit.Killed && ctx.Err() == nil,
			DurationMS:  time.Since(start).Milliseconds(),
			StdoutBytes: stdout.Total(),
			Stderr:      string(stderr.Bytes()),
			LeftRunning: exit.LeftRunning,
			RigErr:      exit.StartErr,
		},
		stdout: stdout.Bytes(),
	}
	if pr.Hung {
		// The signal is the rig's own SIGKILL, not a crash.
		pr.Signal = ""
	}
	pr.Stdout = string(pr.stdout)
	pr.cut = pr.StdoutBytes > int64(len(pr.stdout))
	return pr
}

// sweepCommand lists and kills, on the target, the live processes of the
// process groups pgids (Linux /proc; zombies, which need only reaping, are
// left out) and prints their pids. The sweep runs as a process group of its
// own, so it never finds itself. cat, not awk, opens the files: processes
// end while the list is read, and cat goes on past a vanished file where
// awk stops.
func sweepCommand(pgids []int) string {
	var list []string
	for _, g := range pgids {
		list = append(list, fmt.Sprint(g))
	}
	return "pids=$(cat /proc/[0-9]*/stat 2>/dev/null | awk -v groups=" + markers.Quote(strings.Join(list, " ")) + ` '
BEGIN { n = split(groups, g, " "); for (i = 1; i <= n; i++) want[g[i]] = 1 }
{ pid = $1; sub(/^.*\) /, ""); if (($3 in want) && $1 != "Z") print pid }')
[ -z "$pids" ] || kill -9 $pids 2>/dev/null
echo $pids`
}

// runRemote runs command on the target over a fresh SSH connection through
// run's cutter. On timeout it closes the connection; ending run's case then
// kills whatever the probe still runs there.
func runRemote(ctx context.Context, run *engine.Run, command string, timeout time.Duration) probeRun {
	pr := probeRun{ProbeRun: score.ProbeRun{Where: "remote", ExitCode: -1}}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	defer func() { pr.DurationMS = time.Since(start).Milliseconds() }()
	client, err := run.DialTool(tctx, min(timeout, handshakeTimeout))
	if err != nil {
		pr.RigErr = "connect to the target: " + err.Error()
		return pr
	}
	defer client.Close()
	stop := context.AfterFunc(tctx, func() { client.Close() })
	defer stop()
	sess, err := client.NewSession()
	if err != nil {
		pr.RigErr = "open a session on the target: " + err.Error()
		return pr
	}
	defer sess.Close()
	stdout, stderr := capbuf.New(reconcile.MaxAnswerSize+1), capbuf.New(maxKept)
	sess.Stdout, sess.Stderr = stdout, stderr
	err = sess.Run(command)
	pr.stdout, pr.StdoutBytes, pr.Stderr = stdout.Bytes(), stdout.Total(), string(stderr.Bytes())
	pr.Stdout = string(pr.stdout)
	pr.cut = pr.StdoutBytes > int64(len(pr.stdout))
	var ee *gossh.ExitError
	switch {
	case tctx.Err() != nil && ctx.Err() == nil:
		pr.Hung = true
	case err == nil:
		pr.ExitCode = 0
	case errors.As(err, &ee) && ee.Signal() != "":
		pr.Signal = "SIG" + ee.Signal()
	case errors.As(err, &ee):
		pr.ExitCode = ee.ExitStatus()
	default:
		pr.Err = err.Error()
	}
	return pr
}

// judge reads the probe run's answer and names what went wrong: an answer
// only from a probe that ended by itself and printed exactly one valid
// answer (a non-zero exit status is recorded, not judged: the answer is the
// interface, as for tools).
func judge(pr probeRun, timeout time.Duration) (*reconcile.Answer, []score.Finding) {
	var findings []score.Finding
	if len(pr.LeftRunning) > 0 {
		findings = append(findings, score.Finding{Kind: score.FindingLeftRunning,
			Detail: fmt.Sprintf("processes %v of the probe's process group were still running after it exited; the rig killed them", pr.LeftRunning)})
	}
	if pr.Hung {
		how := "the rig killed its process group"
		if pr.Where == "remote" {
			how = "the rig closed its session and killed its processes on the target"
		}
		return nil, append(findings, score.Finding{Kind: score.FindingHang, Detail: fmt.Sprintf("no answer within %s (--probe-timeout); %s", timeout, how)})
	}
	a, perr := reconcile.ParseAnswer(pr.stdout)
	if perr != nil && pr.cut {
		perr = fmt.Errorf("printed %d bytes; an answer is at most %d bytes", pr.StdoutBytes, reconcile.MaxAnswerSize)
	}
	switch {
	case pr.Err != "":
		return nil, append(findings, score.Finding{Kind: score.FindingCrash, Detail: "its session ended without an exit status (" + pr.Err + ")" + outputNote(perr)})
	case pr.Signal != "":
		return nil, append(findings, score.Finding{Kind: score.FindingCrash, Detail: "killed by a signal (" + pr.Signal + ")" + outputNote(perr)})
	case pr.ExitCode != 0 && perr != nil:
		return nil, append(findings, score.Finding{Kind: score.FindingCrash, Detail: fmt.Sprintf("exited %d without a valid answer (%v)%s", pr.ExitCode, perr, stderrNote(pr.Stderr))})
	case perr != nil:
		return nil, append(findings, score.Finding{Kind: score.FindingMalformed, Detail: perr.Error()})
	}
	return &a, findings
}

func outputNote(perr error) string {
	if perr == nil {
		return " (after printing a valid answer, which does not count)"
	}
	return ""
}

// stderrNote quotes the last line of stderr, which usually says why.
func stderrNote(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return ""
	}
	if len(last) > 200 {
		last = strings.ToValidUTF8(last[:200], "") + "..." // no rune cut in half
	}
	return "; its stderr ends: " + last
}
