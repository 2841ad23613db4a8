package server

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gliderssh "github.com/gliderlabs/ssh"
	"golang.org/x/sys/unix"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
)

// proc is one command: a /bin/sh process group leader and its pipes.
type proc struct {
	s       *Server
	c       *caseState
	tc      *tconn
	sid     int
	pid     int
	wrapped bool // marker-wrapped: it stops itself at its two gates

	stdout, stderr *os.File
	statuses       chan syscall.WaitStatus // from the reaper; closed after exit

	killOnce sync.Once
	killed   atomic.Bool
	reaped   atomic.Bool
}

// spawn starts cmd in its own process group with stdin from /dev/null.
func (s *Server) spawn(c *caseState, tc *tconn, sid int, cmd string, wrapped bool) (*proc, error) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer outW.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		return nil, err
	}
	defer errW.Close()

	// Hold the case's lock across the fork so teardown either sees this
	// process or happens before it is forked.
	c.mu.Lock()
	if c.isEnded() {
		c.mu.Unlock()
		outR.Close()
		errR.Close()
		return nil, errors.New("case ended")
	}
	pid, err := syscall.ForkExec(s.shell, []string{"sh", "-c", cmd}, &syscall.ProcAttr{
		Dir:   s.scratch,
		Env:   s.env,
		Files: []uintptr{devnull.Fd(), outW.Fd(), errW.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		c.mu.Unlock()
		outR.Close()
		errR.Close()
		return nil, err
	}
	p := &proc{s: s, c: c, tc: tc, sid: sid, pid: pid, wrapped: wrapped,
		stdout: outR, stderr: errR, statuses: make(chan syscall.WaitStatus, 8)}
	c.procs[pid] = p
	c.mu.Unlock()

	s.emit(control.Event{Kind: control.ProcSpawned, Case: c.id, Conn: tc.n, Session: sid, PID: pid})
	// run drains statuses to the end, so the exec handler that owns p
	// outlives this goroutine.
	go p.reap()
	return p, nil
}

// reap waits for the leader's stops and its exit. wait4 with WUNTRACED is the
// event source for the gates: no polling.
func (p *proc) reap() {
	defer close(p.statuses)
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(p.pid, &ws, syscall.WUNTRACED, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			p.s.emit(control.Event{Kind: control.ServerProblem, Case: p.c.id, PID: p.pid, Detail: "wait4: " + err.Error()})
			return
		}
		if ws.Exited() || ws.Signaled() {
			p.c.mu.Lock()
			p.reaped.Store(true)
			delete(p.c.procs, p.pid)
			p.c.mu.Unlock()
			p.statuses <- ws
			return
		}
		p.statuses <- ws
	}
}

// kill sends SIGKILL to the process group, once.
func (p *proc) kill(why string) {
	p.killOnce.Do(func() {
		p.killed.Store(true)
		// The group id stays reserved while any member lives, so this cannot
		// reach an unrelated group.
		syscall.Kill(-p.pid, syscall.SIGKILL)
		p.s.emit(control.Event{Kind: control.ProcKilled, Case: p.c.id, Conn: p.tc.n, Session: p.sid, PID: p.pid, Detail: why})
	})
}

func (p *proc) resume() {
	syscall.Kill(-p.pid, syscall.SIGCONT)
	p.s.emit(control.Event{Kind: control.ProcResumed, Case: p.c.id, Conn: p.tc.n, Session: p.sid, PID: p.pid})
}

// hangupDue reports whether the disposition says the group dies now.
func (p *proc) hangupDue() bool {
	return p.c.arm.Disposition == fault.Hangup && p.tc.isLost()
}

// copier moves one of the command's pipes to the channel. When the channel
// dies it keeps draining, so a surviving command never blocks on a full pipe
// or dies of SIGPIPE.
type copier struct {
	src  *os.File
	dst  io.Writer
	done chan struct{}

	mu          sync.Mutex
	syncs       []chan struct{} // waiting for the pipe to be drained
	deadlineSet bool            // a past read deadline is waking the copier
}

func newCopier(src *os.File, dst io.Writer) *copier {
	return &copier{src: src, dst: dst, done: make(chan struct{})}
}

// sync returns a channel closed once every byte written to the pipe before
// the call has been handled. Only the copier, the pipe's one reader, can know
// that: it checks that the pipe is empty while it holds nothing unhandled.
func (cp *copier) sync() <-chan struct{} {
	ch := make(chan struct{})
	cp.mu.Lock()
	defer cp.mu.Unlock()
	select {
	case <-cp.done:
		close(ch)
		return ch
	default:
	}
	cp.syncs = append(cp.syncs, ch)
	// Wake a Read blocked on an empty pipe without closing it.
	cp.src.SetReadDeadline(time.Now())
	cp.deadlineSet = true
	return ch
}

// answerSyncs runs between chunks, when the copier holds no unhandled byte.
func (cp *copier) answerSyncs() {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if len(cp.syncs) > 0 && pipeEmpty(cp.src) {
		for _, ch := range cp.syncs {
			close(ch)
		}
		cp.syncs = nil
	}
	// The past deadline has done its job (this copier is awake). Left in
	// place it would make Read fail without reading the bytes still in the
	// pipe, forever.
	if cp.deadlineSet {
		cp.src.SetReadDeadline(time.Time{})
		cp.deadlineSet = false
	}
}

func pipeEmpty(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	n := 0
	rc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
	return err == nil && n == 0
}

// run copies a chunk at a time. When splitAt > 0, atSplit is called (once)
// right after the first splitAt bytes were written to dst.
func (cp *copier) run(splitAt int64, atSplit func()) {
	defer func() {
		cp.mu.Lock()
		close(cp.done)
		for _, ch := range cp.syncs {
			close(ch)
		}
		cp.syncs = nil
		cp.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	var written int64
	broken := false
	for {
		cp.answerSyncs()
		n, err := cp.src.Read(buf)
		chunk := buf[:n]
		for len(chunk) > 0 {
			part := chunk
			if splitAt > 0 && written < splitAt && written+int64(len(part)) >= splitAt {
				part = chunk[:splitAt-written]
			}
			if !broken {
				if _, werr := cp.dst.Write(part); werr != nil {
					broken = true
				}
			}
			written += int64(len(part))
			chunk = chunk[len(part):]
			if splitAt > 0 && written == splitAt && atSplit != nil {
				atSplit()
				atSplit = nil
			}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return
		}
	}
}

// run supervises the command until it exits, applying the case's moments and
// disposition, and returns how it ended.
func (p *proc) run(sess gliderssh.Session) exitInfo {
	c, s := p.c, p.s
	defer p.stdout.Close()
	defer p.stderr.Close()

	// The output moment: the stdout copier stops after N bytes reached the
	// channel and asks this loop to hold; the loop answers when it may go on.
	type outputHold struct{ resume chan struct{} }
	holdReq := make(chan outputHold)
	var splitAt int64
	var atSplit func()
	if c.arm.Moment == fault.Output && !c.fired.Load() {
		splitAt = c.arm.OutputBytes
		atSplit = func() {
			h := outputHold{resume: make(chan struct{})}
			select {
			case holdReq <- h:
				<-h.resume
			case <-c.ended:
			}
		}
	}
	// The copiers end at EOF on their pipe; run waits for both, so the exec
	// handler that owns p outlives them.
	out := newCopier(p.stdout, sess)
	errc := newCopier(p.stderr, sess.Stderr())
	go out.run(splitAt, atSplit)
	go errc.run(0, nil)

	gates := 0
	// workSynced is set while the command is stopped after its work: it
	// is resumed only once all of its output reached the channel, so an
	// output hold always lands before the complete marker is written.
	var workSynced <-chan struct{}
	var status syscall.WaitStatus
	lost, ended := p.tc.lost, c.ended
	for exited := false; !exited; {
		select {
		case ws, ok := <-p.statuses:
			if !ok {
				exited = true
				break
			}
			if ws.Exited() || ws.Signaled() {
				status, exited = ws, true
				break
			}
			if !ws.Stopped() {
				break
			}
			if !p.wrapped {
				p.resume()
				break
			}
			gates++
			switch gates {
			case 1:
				s.emit(control.Event{Kind: control.ProcStartGate, Case: c.id, Conn: p.tc.n, Session: p.sid, PID: p.pid})
				if c.arm.Disposition == fault.RemoteKill {
					p.kill("remote-kill: right after the start marker")
				}
				s.reach(c, p.tc, p.sid, fault.Started)
				switch {
				case p.killed.Load():
				case c.isEnded():
					p.kill("case ended")
				case p.hangupDue():
					p.kill("hangup: transport lost")
				default:
					p.resume()
				}
			case 2:
				s.emit(control.Event{Kind: control.ProcWorkDone, Case: c.id, Conn: p.tc.n, Session: p.sid, PID: p.pid})
				workSynced = out.sync()
			default:
				p.resume()
			}
		case h := <-holdReq:
			s.reach(c, p.tc, p.sid, fault.Output)
			switch {
			case c.isEnded():
				p.kill("case ended")
			case p.hangupDue():
				p.kill("hangup: transport lost")
			}
			close(h.resume)
		case <-workSynced:
			workSynced = nil
			switch {
			case p.killed.Load():
			case p.hangupDue():
				p.kill("hangup: transport lost")
			default:
				p.resume()
			}
		case <-lost:
			lost = nil
			if c.arm.Disposition == fault.Hangup {
				p.kill("hangup: transport lost")
			}
		case <-ended:
			ended = nil
			p.kill("case ended")
		}
	}
	for range p.statuses {
	}
	// A command without gates can exit with output still in the pipe; the
	// output moment may still be due.
	for waiting := true; waiting; {
		select {
		case h := <-holdReq:
			s.reach(c, p.tc, p.sid, fault.Output)
			close(h.resume)
		case <-out.done:
			waiting = false
		}
	}
	<-errc.done
	switch {
	case status.Signaled():
		s.emit(control.Event{Kind: control.ProcExited, Case: c.id, Conn: p.tc.n, Session: p.sid, PID: p.pid, Signal: unix.SignalName(status.Signal())})
		return exitInfo{signal: signalForSSH(status.Signal())}
	default:
		code := status.ExitStatus()
		s.emit(control.Event{Kind: control.ProcExited, Case: c.id, Conn: p.tc.n, Session: p.sid, PID: p.pid, ExitCode: &code})
		return exitInfo{code: code}
	}
}

// signalForSSH names a signal the way RFC 4254 exit-signal does: without "SIG".
func signalForSSH(sig syscall.Signal) string {
	name := unix.SignalName(sig)
	if len(name) > 3 && name[:3] == "SIG" {
		return name[3:]
	}
	return name
}
