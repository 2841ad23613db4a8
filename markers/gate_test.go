//go:build linux

package markers

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestGates runs wrapped scripts the way the rig's SSH server does: holding
// both gate FIFOs, with the script run as a grandchild of the process started
// (sh running a file), so the gates are seen at any depth. Each gate line is
// the event; nothing here sleeps or polls.
func TestGates(t *testing.T) {
	tests := []struct {
		name      string
		gate      string // "fifo": a FIFO the test holds; otherwise the literal value
		gateSet   bool
		noLedger  bool
		wantGates int
		wantCode  int
	}{
		{name: "gate on", gate: "fifo", gateSet: true, wantGates: 2, wantCode: 7},
		{name: "gate set but empty", gate: "", gateSet: true, wantGates: 0, wantCode: 7},
		{name: "gate not a FIFO", gate: "1", gateSet: true, wantGates: 0, wantCode: 7},
		{name: "gate unset", gateSet: false, wantGates: 0, wantCode: 7},
		{name: "gate on without a ledger", gate: "fifo", gateSet: true, noLedger: true, wantGates: 0, wantCode: ExitNoLedger},
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
				scriptFile := filepath.Join(dir, "script.sh")
				if err := os.WriteFile(scriptFile, []byte(script), 0o600); err != nil {
					t.Fatal(err)
				}
				// The shell under test runs a shell that runs the file:
				// the script's shell is a grandchild.
				base := argvFor("")
				var inner []string
				for _, a := range base[:len(base)-2] {
					inner = append(inner, singleQuote(a))
				}
				argv := argvFor(strings.Join(append(inner, singleQuote(scriptFile)), " "))
				env := environWithoutGate()
				var g *testGate
				if tt.gateSet {
					value := tt.gate
					if tt.gate == "fifo" {
						g = newTestGate(t, dir)
						value = g.path
					}
					env = append(env, GateEnv+"="+value)
				}
				gates, code, output := runGated(t, argv, env, g, func(n int, line gateLine) {
					ledger := readLedger(t, ledgerPath)
					_, statErr := os.Stat(workDone)
					workRan := statErr == nil
					wantKind := map[int]string{1: GateStart, 2: GateDone}[n]
					if line.kind != wantKind || line.id != "gated" {
						t.Errorf("gate %d is %q for %q, want %q for %q", n, line.kind, line.id, wantKind, "gated")
					}
					if len(ledger.Entries) != 1 || ledger.Entries[0].Kind != Start {
						t.Errorf("at gate %d the ledger should hold just the start marker, has %+v", n, ledger.Entries)
					} else if ledger.Entries[0].PID != line.pid {
						t.Errorf("gate %d names pid %d, the start marker %d", n, line.pid, ledger.Entries[0].PID)
					}
					if n == 1 && workRan {
						t.Errorf("at the first gate the work has already run")
					}
					if n == 2 && !workRan {
						t.Errorf("at the second gate the work has not run (%v)", statErr)
					}
				})
				if gates != tt.wantGates {
					t.Errorf("%d gates, want %d", gates, tt.wantGates)
				}
				if code != tt.wantCode {
					t.Errorf("exit code %d, want %d; output: %q", code, tt.wantCode, output)
				}
				if tt.gate == "1" {
					if _, err := os.Stat(filepath.Join(dir, "1")); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("a gate that is not a FIFO left a file behind")
					}
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

// testGate is the test's end of the two gate FIFOs, both held open for
// reading and writing, as the server holds them: the script's opens never
// block, and the gate FIFO never reports end of file.
type testGate struct {
	path      string
	gate, ack *os.File
}

func newTestGate(t *testing.T, dir string) *testGate {
	t.Helper()
	g := &testGate{path: filepath.Join(dir, "gate")}
	for _, p := range []string{g.path, g.path + GateAckSuffix} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if g.gate, err = os.OpenFile(g.path, os.O_RDWR, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.gate.Close() })
	if g.ack, err = os.OpenFile(g.path+GateAckSuffix, os.O_RDWR, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.ack.Close() })
	return g
}

type gateLine struct {
	kind, id string
	pid      int
}

func parseGateLine(s string) (gateLine, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return gateLine{}, fmt.Errorf("gate line %q: want 3 fields", s)
	}
	pid, err := strconv.Atoi(f[2])
	if err != nil {
		return gateLine{}, fmt.Errorf("gate line %q: pid: %v", s, err)
	}
	return gateLine{kind: f[0], id: f[1], pid: pid}, nil
}

// runGated runs argv. With a gate, it answers each gate line: atGate gets the
// gate's number (from 1) and line, then the script is told to go on. It
// returns the number of gates, the exit code and what the script wrote.
func runGated(t *testing.T, argv, env []string, g *testGate, atGate func(n int, line gateLine)) (gates, exitCode int, combinedOutput string) {
	t.Helper()
	var out strings.Builder
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	lines := make(chan string)
	if g != nil {
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(g.gate)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		// The reader ends when the gate FIFO is closed.
		t.Cleanup(func() {
			g.gate.Close()
			for range lines {
			}
		})
	}
	for {
		select {
		case l := <-lines:
			line, err := parseGateLine(l)
			if err != nil {
				t.Fatal(err)
			}
			gates++
			atGate(gates, line)
			if _, err := g.ack.WriteString("go\n"); err != nil {
				t.Fatal(err)
			}
		case err := <-exited:
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			return gates, cmd.ProcessState.ExitCode(), out.String()
		}
	}
}
