package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sshrig/sshrig/internal/procs"
	"github.com/sshrig/sshrig/matrix"
)

// TestInterruptWritesReport: Ctrl-C once cases are running ends the run
// with exit 130, after it wrote a report.json marked interrupted, with the
// case runs it judged, whose event log sshrig verify accepts; the run leaves
// no process of its own behind.
func TestInterruptWritesReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(os.Args[0], "run", "--tool", "exec:sshrig exec", "--out", dir)
	sshrigOnPath(t) // the exec tool is this binary too
	cmd.Env = append(os.Environ(), testMainEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once the first cases are judged, as a person would, a
	// moment into the run.
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "[3/") {
			break
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit %v, want %d", err, exitInterrupted)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Interrupted bool `json:"interrupted"`
		Cases       []struct {
			Verdict string `json:"verdict"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if all := len(matrix.DefaultMatrix()); !rep.Interrupted || len(rep.Cases) < 3 || len(rep.Cases) >= all {
		t.Errorf("report: interrupted %t with %d cases, want marked interrupted with some but not all %d", rep.Interrupted, len(rep.Cases), all)
	}
	verify := exec.Command(os.Args[0], "verify", dir)
	verify.Env = append(os.Environ(), testMainEnv+"=1")
	if out, err := verify.CombinedOutput(); err != nil {
		t.Errorf("sshrig verify: %v\n%s", err, out)
	}
	if left := procs.Group(cmd.Process.Pid); len(left) > 0 {
		t.Errorf("the interrupted run left processes of its group: %v", left)
	}
}
