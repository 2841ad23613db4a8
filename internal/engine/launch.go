package engine

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sshrig/sshrig/internal/server"
	"github.com/sshrig/sshrig/target"
)

// Endpoint and Launcher are the target package's: the engine drives any
// server a Launcher starts.
type (
	Endpoint = target.Endpoint
	Launcher = target.Launcher
)

// InProcess runs the server inside this process on loopback: the embedded
// target. The control protocol still goes over TCP, exactly as for the
// other launchers.
type InProcess struct {
	Shell string // default /bin/sh
}

// Launch implements Launcher.
func (l InProcess) Launch(ctx context.Context, token []byte) (*Endpoint, error) {
	sshLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("engine: listen: %w", err)
	}
	ctlLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		sshLn.Close()
		return nil, fmt.Errorf("engine: listen: %w", err)
	}
	srv, err := server.New(server.Config{SSH: sshLn, Control: ctlLn, Token: token, Shell: l.Shell})
	if err != nil {
		sshLn.Close()
		ctlLn.Close()
		return nil, err
	}
	srv.Start()
	return &Endpoint{
		SSHAddr:     sshLn.Addr().String(),
		ControlAddr: ctlLn.Addr().String(),
		RigHost:     "127.0.0.1",
		Where:       "embedded, in this process, scratch " + srv.Scratch() + "; " + srv.HostModel(),
		Stop:        srv.Close,
		// The ledger is a local file: read it directly as well.
		ReadLedger: func(context.Context) ([]byte, error) { return os.ReadFile(srv.Ledger()) },
		ReadLedgerOf: func(_ context.Context, id string) ([]byte, error) {
			f, err := os.Open(srv.Ledger())
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return linesOf(f, id)
		},
	}, nil
}

// TokenEnv is target.TokenEnv, for the launchers here.
const TokenEnv = target.TokenEnv

// Subprocess runs the server as a separate process: Command is the argv
// that starts `sshrig serve` (for example {"/usr/local/bin/sshrig", "serve"}).
// The process exits when its stdin closes, so it cannot outlive the rig.
type Subprocess struct {
	Command []string
	Env     []string // extra environment
}

// Launch implements Launcher.
func (l Subprocess) Launch(ctx context.Context, token []byte) (*Endpoint, error) {
	if len(l.Command) == 0 {
		return nil, errors.New("engine: subprocess launcher needs a command")
	}
	args := append(append([]string{}, l.Command[1:]...),
		"--ssh-listen=127.0.0.1:0", "--control-listen=127.0.0.1:0", "--stdin-lifeline")
	cmd := exec.Command(l.Command[0], args...)
	cmd.Env = append(append(os.Environ(), l.Env...), TokenEnv+"="+hex.EncodeToString(token))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	logs := &tailBuffer{max: 64 << 10}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("engine: start %s: %w", l.Command[0], err)
	}
	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()
	stop := func() error {
		stdin.Close()
		select {
		case err := <-waitDone:
			return exitErr(err)
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-waitDone
			return errors.New("engine: server did not exit within 10s of its stdin closing; killed")
		}
	}

	readyCh := make(chan server.ReadyLine, 1)
	readErr := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			readErr <- fmt.Errorf("no ready line: %v", err)
			return
		}
		var r server.ReadyLine
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			readErr <- fmt.Errorf("bad ready line %q: %v", strings.TrimSpace(line), err)
			return
		}
		readyCh <- r
		io.Copy(io.Discard, stdout)
	}()
	select {
	case r := <-readyCh:
		return &Endpoint{
			SSHAddr:     r.SSH,
			ControlAddr: r.Control,
			RigHost:     "127.0.0.1",
			Where:       fmt.Sprintf("embedded, process %d; %s", r.PID, r.Hosts),
			Stop:        stop,
			Logs:        logs.String,
		}, nil
	case err := <-readErr:
		stop()
		return nil, fmt.Errorf("engine: %s: %v; stderr: %s", l.Command[0], err, logs.String())
	case <-ctx.Done():
		stop()
		return nil, ctx.Err()
	}
}

func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 0 {
		return nil
	}
	return err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
