//go:build linux

package markers

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestGates runs wrapped scripts the way the rig's SSH server does: in its
// own process group, watched with wait4(WUNTRACED). Each stop is the event;
// nothing here sleeps or polls.
func TestGates(t *testing.T) {
	tests := []struct {
		name      string
		gate      string // "" with gateSet: the variable is set but empty
		gateSet   bool
		noLedger  bool
		wantStops int
		wantCode  int
	}{
		{name: "gate on", gate: "1", gateSet: true, wantStops: 2, wantCode: 7},
		{name: "gate set but empty", gate: "", gateSet: true, wantStops: 0, wantCode: 7},
		{name: "gate unset", gateSet: false, wantStops: 0, wantCode: 7},
		{name: "gate on without a ledger", gate: "1", gateSet: true, noLedger: true, wantStops: 0, wantCode: ExitNoLedger},
	}
	forEachShell(t, func(t *testing.T, argvFor func(string) []string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				ledgerPath := filepath.Join(dir, "ledger")
				if tt.noLedger {
					ledgerPath = filepath.Join(dir, "missing", "ledger")
				}
				workDone := filepath.Join(dir, "work done")
				script, err := Wrap("gated", ledgerPath, "echo worked >"+singleQuote(workDone)+"; exit 7")
				if err != nil {
					t.Fatal(err)
				}
				env := environWithoutGate()
				if tt.gateSet {
					env = append(env, GateEnv+"="+tt.gate)
				}
				stops, code, output := runGated(t, argvFor(script), env, func(stop int) {
					ledger := readLedger(t, ledgerPath)
					_, statErr := os.Stat(workDone)
					workRan := statErr == nil
					switch stop {
					case 1:
						if len(ledger.Entries) != 1 || ledger.Entries[0].Kind != Start {
							t.Errorf("at the first stop the ledger should hold just the start marker, has %+v", ledger.Entries)
						}
						if workRan {
							t.Errorf("at the first stop the work has already run")
						}
					case 2:
						if len(ledger.Entries) != 1 || ledger.Entries[0].Kind != Start {
							t.Errorf("at the second stop the ledger should still hold just the start marker, has %+v", ledger.Entries)
						}
						if !workRan {
							t.Errorf("at the second stop the work has not run (%v)", statErr)
						}
					}
				})
				if stops != tt.wantStops {
					t.Errorf("%d stops, want %d", stops, tt.wantStops)
				}
				if code != tt.wantCode {
					t.Errorf("exit code %d, want %d; output: %q", code, tt.wantCode, output)
				}
				if tt.noLedger {
					if _, err := os.Stat(workDone); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("the work ran without a start marker")
					}
					return
				}
				ledger := readLedger(t, ledgerPath)
				if len(ledger.Entries) != 2 || ledger.Entries[1].Kind != Complete || ledger.Entries[1].ExitCode != 7 {
					t.Errorf("after the run the ledger should hold a start and a complete with code 7, has %+v", ledger.Entries)
				}
			})
		}
	})
}

func readLedger(t *testing.T, path string) *Ledger {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ledger := ParseBytes(data)
	if len(ledger.Malformed) != 0 {
		t.Fatalf("malformed ledger lines: %v", ledger.Malformed)
	}
	return ledger
}

// runGated starts argv in its own process group and waits for it with
// wait4(WUNTRACED). At each SIGSTOP it calls atStop with the stop's number
// (from 1) and then resumes the process with SIGCONT. It returns the number
// of stops, the exit code and what the script wrote to stdout and stderr.
func runGated(t *testing.T, argv, env []string, atStop func(stop int)) (stops, exitCode int, combinedOutput string) {
	t.Helper()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	output, err := os.Create(filepath.Join(t.TempDir(), "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer output.Close()
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{devNull.Fd(), output.Fd(), output.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	reaped := false
	defer func() {
		// If a check failed fatally the shell may be stopped or running:
		// kill its group and reap it so it does not outlive the test.
		if !reaped {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
	}()
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("wait4: %v", err)
		}
		switch {
		case ws.Stopped():
			stops++
			if ws.StopSignal() != syscall.SIGSTOP {
				t.Fatalf("stopped by %v, want SIGSTOP", ws.StopSignal())
			}
			atStop(stops)
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Fatalf("SIGCONT: %v", err)
			}
		case ws.Exited():
			reaped = true
			text, err := os.ReadFile(output.Name())
			if err != nil {
				t.Fatal(err)
			}
			return stops, ws.ExitStatus(), string(text)
		case ws.Signaled():
			reaped = true
			t.Fatalf("script killed by %v", ws.Signal())
		}
	}
}
