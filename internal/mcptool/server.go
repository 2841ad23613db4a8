package mcptool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sshrig/sshrig/internal/procs"
)

// exitGrace is how long a server gets to exit on its own once its stdin is
// closed (the MCP stdio shutdown) before its process group is killed.
const exitGrace = 500 * time.Millisecond

// server is one stdio MCP server process, in its own process group.
type server struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *watchedReader
	exited chan struct{} // closed once the process has been reaped
	state  *os.ProcessState
	closed sync.Once
	left   []int
}

// startServer starts argv with env added to the rig's environment, its
// stderr going to stderr; start runs cmd.Start where the server must live
// (tool.Target.Start).
func startServer(argv, env []string, start func(func() error) error, stderr io.Writer) (*server, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Children of the server may hold its stderr open after it exits.
	cmd.WaitDelay = exitGrace
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := start(cmd.Start); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	inR.Close()
	outW.Close()
	s := &server{cmd: cmd, stdin: inW, stdout: &watchedReader{r: outR}, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		s.state = cmd.ProcessState
		close(s.exited)
	}()
	return s, nil
}

// transport is the MCP connection over the server's stdin and stdout.
func (s *server) transport() mcp.Transport {
	return &mcp.IOTransport{Reader: s.stdout, Writer: s.stdin}
}

// gone waits a little for the process to be reaped, and says how it ended
// ("" while it still runs). Called once a read from it failed, when its end
// is on its way.
func (s *server) gone(wait time.Duration) string {
	select {
	case <-s.exited:
	case <-time.After(wait):
		return ""
	}
	ws := s.state.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return fmt.Sprintf("exit status %d", ws.ExitStatus())
}

// stop ends the server: stdin closed, a grace to exit, then its process
// group killed. It returns the processes of the group that outlived the
// server (which the kill ended).
func (s *server) stop() []int {
	s.closed.Do(func() {
		s.stdin.Close()
		select {
		case <-s.exited:
		case <-time.After(exitGrace):
		}
		// The server itself may be slow to exit; what else is in its
		// group outlived it.
		for _, pid := range procs.Group(s.cmd.Process.Pid) {
			if pid != s.cmd.Process.Pid {
				s.left = append(s.left, pid)
			}
		}
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
		s.stdout.r.Close()
	})
	return s.left
}

// watchedReader passes the server's stdout to the MCP client and keeps the
// first line that is not JSON: the protocol's channel carried garbage.
type watchedReader struct {
	r       io.ReadCloser
	mu      sync.Mutex
	partial []byte
	garbage []byte
}

func (w *watchedReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.garbage == nil {
		w.partial = append(w.partial, p[:n]...)
		for {
			i := bytes.IndexByte(w.partial, '\n')
			if i < 0 {
				break
			}
			line := bytes.TrimSpace(w.partial[:i])
			if len(line) > 0 && !json.Valid(line) {
				w.garbage = append([]byte(nil), line[:min(len(line), 200)]...)
				break
			}
			w.partial = w.partial[i+1:]
		}
		if err != nil && w.garbage == nil {
			if line := bytes.TrimSpace(w.partial); len(line) > 0 && !json.Valid(line) {
				w.garbage = append([]byte(nil), line[:min(len(line), 200)]...)
			}
		}
		if len(w.partial) > 1<<20 { // one frame of a MiB is enough to judge
			w.partial = nil
		}
	}
	return n, err
}

func (w *watchedReader) Close() error { return w.r.Close() }

// Garbage is the first non-JSON line the server wrote, nil when none.
func (w *watchedReader) Garbage() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.garbage
}

// lockedWriter serialises the rig's own lines with the server's stderr,
// which exec copies from another goroutine.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
