package server

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/server/hostsetup"
	"github.com/sshrig/sshrig/markers"
)

// proc is one command: a /bin/sh process group leader, its gate and its
// pipes, or its pseudo-terminal.
type proc struct {
	s   *Server
	c   *caseState
	tc  *tconn
	sid int
	req *execRequest
	pid int

	gate *gate
	// Without a terminal: the command's stdin, stdout and stderr pipes.
	stdin          *os.File
	stdout, stderr *os.File
	// With a terminal: the master, which the server owns. stdout reads it
	// and stdin writes it.
	master     *os.File
	masterOnce sync.Once

	statuses chan syscall.WaitStatus // from the reaper; closed after exit

	// workload is set once this command's tree passed the case's first
	// start gate.
	workload  atomic.Bool
	markerPID atomic.Int64 // the pid of the shell that passed the start gate

	killOnce sync.Once
	killed   atomic.Bool
	reaped   atomic.Bool

	stdinDone <-chan struct{} // set by run: closed when the stdin copier ended
	// scp, for an `scp -t` without a terminal, reads its stdin (set by
	// startStdin).
	scp *scpUpload
}

// spawnSpec says what to start and how.
type spawnSpec struct {
	argv []string
	env  []string // added to the server's environment
	pty  *ptyRequest
	// ignoreHUP: the command starts with SIGHUP ignored (survive under a
	// terminal: the kernel's hangup must not end it).
	ignoreHUP bool
}

// spawn starts a command in its own process group (under a terminal, its own
// session with the terminal as its controlling terminal).
func (s *Server) spawn(c *caseState, tc *tconn, sid int, req *execRequest, sp spawnSpec) (p *proc, err error) {
	g, err := newGate(s.gates, s.gateN.Add(1))
	if err != nil {
		return nil, err
	}
	std := stdio{attr: &syscall.SysProcAttr{Setpgid: true}}
	defer func() {
		for _, f := range std.toClose {
			f.Close()
		}
		if err != nil {
			for _, f := range std.onFail {
				f.Close()
			}
			g.in.Close()
			g.ack.Close()
			g.remove()
		}
	}()
	p = &proc{s: s, c: c, tc: tc, sid: sid, req: req, gate: g, statuses: make(chan syscall.WaitStatus, 8)}
	if sp.pty != nil {
		err = p.openTerminal(&std, sp.pty)
	} else {
		err = p.openPipes(&std)
	}
	if err != nil {
		return nil, err
	}
	path, argv, env := s.commandLine(c, g, sp, std.attr)

	// Hold the case's lock across the fork so teardown either sees this
	// process or happens before it is forked.
	c.mu.Lock()
	if c.isEnded() {
		c.mu.Unlock()
		return nil, errors.New("case ended")
	}
	pa := &syscall.ProcAttr{Dir: c.host.home, Env: env, Files: std.files, Sys: std.attr}
	var pid int
	if t := c.host.thread; t != nil {
		// Forked from the case's namespace thread: the command starts in
		// the case's mount namespace.
		t.do(func() { pid, err = syscall.ForkExec(path, argv, pa) })
	} else {
		pid, err = syscall.ForkExec(path, argv, pa)
	}
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	p.pid = pid
	c.procs[pid] = p
	c.mu.Unlock()

	s.emit(control.Event{Kind: control.ProcSpawned, Case: c.id, Conn: tc.n, Session: sid, PID: pid})
	// run drains statuses and gate lines to the end, so the handler that
	// owns p outlives these goroutines.
	go p.reap()
	go g.read(func(err error) {
		s.emit(control.Event{Kind: control.ServerProblem, Case: c.id, Conn: tc.n, Session: sid, PID: pid, Detail: err.Error()})
	})
	return p, nil
}

// stdio is what a command's standard files are made of while it is spawned.
type stdio struct {
	files   []uintptr            // the child's stdin, stdout and stderr
	attr    *syscall.SysProcAttr // how the child is forked
	toClose []*os.File           // the child's ends: closed once spawn returns
	onFail  []*os.File           // the server's ends: closed if the command does not start
}

// openTerminal opens the command's pseudo-terminal: the child gets the
// terminal, p keeps its master.
func (p *proc) openTerminal(std *stdio, size *ptyRequest) error {
	master, tty, err := pty.Open()
	if err != nil {
		return fmt.Errorf("pty: %w", err)
	}
	std.toClose = append(std.toClose, tty)
	// The library's master is a blocking file: deadlines would not wake
	// its reader and Close would wait for a blocked Read, so the kernel's
	// hangup would never come. A non-blocking duplicate is pollable.
	master, err = pollable(master)
	if err != nil {
		tty.Close()
		return fmt.Errorf("pty: %w", err)
	}
	std.onFail = append(std.onFail, master)
	if err := pty.Setsize(master, size.winsize()); err != nil {
		return fmt.Errorf("pty: %w", err)
	}
	p.master = master
	std.files = []uintptr{tty.Fd(), tty.Fd(), tty.Fd()}
	std.attr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	return nil
}

// openPipes opens the command's stdin, stdout and stderr pipes.
func (p *proc) openPipes(std *stdio) error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	std.toClose, std.onFail = append(std.toClose, inR), append(std.onFail, inW)
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	std.toClose, std.onFail = append(std.toClose, outW), append(std.onFail, outR)
	errR, errW, err := os.Pipe()
	if err != nil {
		return err
	}
	std.toClose, std.onFail = append(std.toClose, errW), append(std.onFail, errR)
	p.stdin, p.stdout, p.stderr = inW, outR, errR
	std.files = []uintptr{inR.Fd(), outW.Fd(), errW.Fd()}
	return nil
}

// commandLine is what the command is executed as: its program, argv and
// environment, in the case's home and with the case's /tmp (through the
// set-up step under a user namespace, which it adds to attr).
func (s *Server) commandLine(c *caseState, g *gate, sp spawnSpec, attr *syscall.SysProcAttr) (path string, argv, env []string) {
	argv = sp.argv
	if sp.ignoreHUP {
		// Ignored signals stay ignored across exec, and a non-interactive
		// shell cannot trap one that was ignored on entry.
		argv = append([]string{argv[0], "-c", `trap '' HUP; exec "$0" "$@"`}, argv...)
	}
	env = append(append(append([]string{}, s.env...), sp.env...), markers.GateEnv+"="+g.path, "HOME="+c.host.home,
		markers.HostIDEnv+"="+c.id) // a per-host script's marker id: this case's, each host being a case
	path = argv[0]
	if c.host.tmp != "" && c.host.thread == nil {
		if s.ns == userNamespace {
			// The set-up step puts the case's tmp over /tmp, then becomes
			// the command: the same process, pid and group.
			s.ns.apply(attr)
			path, argv = s.self, hostsetup.Argv(c.host.tmp, c.host.home, s.keep, argv)
			env = append(env, hostsetup.Env+"=1")
		} else {
			env = append(env, "TMPDIR="+c.host.tmp)
		}
	}
	return path, argv, env
}

// pollable returns a non-blocking duplicate of f, which Go's poller serves,
// and closes f.
func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// reap waits for the leader's exit (and stops, which it undoes: a command
// that stops itself is not a gate).
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

// kill sends SIGKILL to the process group (and to the group of the shell
// that passed the gate, when a job-control shell put it in another), once.
func (p *proc) kill(why string) {
	p.killOnce.Do(func() {
		p.killed.Store(true)
		// The group id stays reserved while any member lives, so this cannot
		// reach an unrelated group.
		syscall.Kill(-p.pid, syscall.SIGKILL)
		if mp := int(p.markerPID.Load()); mp != 0 {
			if pg, err := syscall.Getpgid(mp); err == nil && pg != p.pid {
				syscall.Kill(-pg, syscall.SIGKILL)
			}
		}
		p.s.emit(control.Event{Kind: control.ProcKilled, Case: p.c.id, Conn: p.tc.n, Session: p.sid, PID: p.pid, Detail: why})
	})
}

// hangUp closes the terminal's master, as sshd does when the session's
// transport is gone: the kernel sends SIGHUP to the session.
func (p *proc) hangUp(why string) {
	if p.master == nil {
		return
	}
	p.masterOnce.Do(func() {
		p.master.Close()
		p.s.emit(control.Event{Kind: control.ProcHungUp, Case: p.c.id, Conn: p.tc.n, Session: p.sid, PID: p.pid, Detail: why})
	})
}

// proceed lets the script waiting at the gate go on.
func (p *proc) proceed() {
	p.gate.proceed()
	p.s.emit(control.Event{Kind: control.ProcResumed, Case: p.c.id, Conn: p.tc.n, Session: p.sid, PID: p.pid})
}

// eligible reports whether the moments from exec on may hold for this command.
func (p *proc) eligible() bool { return p.req.candidate || p.holdsAsWorkload() }

// holdsAsWorkload reports whether this command is the case's workload and
// the case's moments follow the workload (not another command:
// control.Arm.HoldCommand).
func (p *proc) holdsAsWorkload() bool { return p.workload.Load() && p.c.arm.HoldCommand == "" }

// hangupDue reports whether the disposition says the command dies now.
func (p *proc) hangupDue() bool {
	return p.c.arm.Disposition == fault.Hangup && p.tc.isLost()
}

// hangupNow applies the hangup disposition: under a terminal, the kernel's
// SIGHUP (the master closes); without one, SIGKILL to the group.
func (p *proc) hangupNow() {
	if p.master != nil {
		p.hangUp("transport lost")
		return
	}
	p.kill("hangup: transport lost")
}

// copier moves one of the command's outputs to the channel. When the channel
// dies it keeps draining, so a surviving command never blocks on a full pipe
// or dies of SIGPIPE.
type copier struct {
	src  *os.File
	dst  io.Writer
	done chan struct{}

	// The output moment: once split bytes (counted from the start) have
	// been written to dst, atSplit is called, once.
	split   atomic.Int64
	written atomic.Int64
	atSplit func()

	mu          sync.Mutex
	syncs       []chan struct{} // waiting for the pipe to be drained
	deadlineSet bool            // a past read deadline is waking the copier
}

func newCopier(src *os.File, dst io.Writer) *copier {
	return &copier{src: src, dst: dst, done: make(chan struct{})}
}

// armSplit asks for atSplit once n more bytes reached dst.
func (cp *copier) armSplit(n int64) { cp.split.CompareAndSwap(0, cp.written.Load()+n) }

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

// run copies a chunk at a time until the source ends (end of file, or EIO
// from a terminal master whose last slave closed).
func (cp *copier) run() {
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
	broken := false
	atSplit := cp.atSplit
	for {
		cp.answerSyncs()
		n, err := cp.src.Read(buf)
		chunk := buf[:n]
		for len(chunk) > 0 {
			part := chunk
			written, splitAt := cp.written.Load(), cp.split.Load()
			if atSplit != nil && splitAt > 0 && written < splitAt && written+int64(len(part)) >= splitAt {
				part = chunk[:splitAt-written]
			}
			if !broken {
				if _, werr := cp.dst.Write(part); werr != nil {
					broken = true
				}
			}
			written = cp.written.Add(int64(len(part)))
			chunk = chunk[len(part):]
			if atSplit != nil && splitAt > 0 && written == splitAt {
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
// disposition, and returns how it ended. ch is the session's channel.
func (p *proc) run(ch gossh.Channel) exitInfo {
	defer p.gate.close()
	if p.master != nil {
		defer p.masterOnce.Do(func() { p.master.Close() })
	} else {
		defer p.stdout.Close()
		defer p.stderr.Close()
	}

	o := p.startOutputs(ch)
	stdinDone := p.startStdin(ch)
	status := p.supervise(o)
	for range p.statuses {
	}
	if p.scp != nil && status.Exited() && status.ExitStatus() == 0 {
		p.scp.finished()
	}
	p.drainOutputs(o)
	if p.stdin != nil {
		p.stdin.Close()
	}
	// The stdin copier ends when the channel does (closed by the caller
	// after the exit status); the caller waits for it through stdinDone.
	p.stdinDone = stdinDone
	return p.reportExit(status)
}

// outputHold is the stdout copier's request to hold at the output moment;
// the supervisor closes resume when the copier may go on.
type outputHold struct{ resume chan struct{} }

// outputs are the copiers of a running command's output and the output
// moment they announce.
type outputs struct {
	out, errc *copier // errc is nil under a terminal
	holdReq   chan outputHold
	// announce: the output moment is announced once OutputBytes of the
	// workload's stdout reached the channel.
	announce bool
}

// startOutputs starts copying the command's output to ch, with the output
// moment armed where the case names one.
func (p *proc) startOutputs(ch gossh.Channel) *outputs {
	c := p.c
	// The output moment: the stdout copier stops after N bytes reached the
	// channel and asks the supervisor to hold; it answers when it may go on.
	holdReq := make(chan outputHold)
	o := &outputs{holdReq: holdReq}
	if p.master != nil {
		o.out = newCopier(p.master, ch)
	} else {
		o.out = newCopier(p.stdout, ch)
		o.errc = newCopier(p.stderr, ch.Stderr())
	}
	// The output moment, once OutputBytes of the workload's stdout reached
	// the channel, is announced wherever a case names OutputBytes: held
	// when it is the armed moment, unheld when the case armed another
	// moment or none, so that case's timeline still shows it.
	o.announce = c.arm.OutputBytes > 0 && (c.arm.Moment != fault.Output || !c.fired.Load())
	if o.announce {
		o.out.atSplit = func() {
			h := outputHold{resume: make(chan struct{})}
			select {
			case holdReq <- h:
				<-h.resume
			case <-c.ended:
			}
		}
		if p.req.candidate {
			o.out.armSplit(c.arm.OutputBytes)
		}
	}
	// The copiers end at end of file; run waits for them, so the handler
	// that owns p outlives them.
	go o.out.run()
	if o.errc != nil {
		go o.errc.run()
	}
	return o
}

// startStdin starts copying the channel's data to the command until the
// client's EOF; the returned channel is closed when the copy ended.
func (p *proc) startStdin(ch gossh.Channel) <-chan struct{} {
	stdinDone := make(chan struct{})
	if p.master == nil && execDetail(p.req.command) == "scp -t" {
		p.scp = newSCPUpload(p, ch)
	}
	go func() {
		defer close(stdinDone)
		if p.master != nil {
			io.Copy(p.master, ch)
			return
		}
		var in io.Reader = ch
		if p.scp != nil {
			in = p.scp
		}
		io.Copy(p.stdin, in)
		p.stdin.Close()
	}()
	return stdinDone
}

// supervise answers the command's stops, gate lines and output holds, the
// transport's loss and the case's end until the command exits, and returns
// its last wait status.
func (p *proc) supervise(o *outputs) syscall.WaitStatus {
	c, s := p.c, p.s
	gates := 0
	// workSynced is set while the command waits at its done gate: it goes
	// on only once all of its output reached the channel, so an output hold
	// always lands before the complete marker is written.
	var workSynced <-chan struct{}
	var status syscall.WaitStatus
	lost, ended, lines := p.tc.lost, c.ended, p.gate.lines
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
			if ws.Stopped() {
				syscall.Kill(-p.pid, syscall.SIGCONT)
			}
		case l, ok := <-lines:
			if !ok {
				lines = nil
				break
			}
			gates++
			switch l.kind {
			case markers.GateStart:
				p.passStartGate(l, o)
			case markers.GateDone:
				s.emit(control.Event{Kind: control.ProcWorkDone, Case: c.id, Conn: p.tc.n, Session: p.sid, PID: p.pid, MarkerID: l.id, MarkerPID: l.pid})
				workSynced = o.out.sync()
			}
		case h := <-o.holdReq:
			p.holdOutput(h)
		case <-workSynced:
			workSynced = nil
			p.passDoneGate()
		case <-lost:
			lost = nil
			p.transportLost()
		case <-ended:
			ended = nil
			p.kill("case ended")
		}
	}
	p.lateStartGate(lines)
	return status
}

// lateStartGate records a start gate the command reached just before it
// died. A script killed while it waits at its start gate (its terminal hung
// up as the transport was lost) wrote its start marker and its gate line;
// when its exit and that line arrive together, the loop may take the exit
// first, and the server would say it never started while the ledger says it
// did. The server's own line, written now, arrives after any line the dead
// script wrote, so every such line is read before it.
func (p *proc) lateStartGate(lines <-chan gateLine) {
	if lines == nil || p.markerPID.Load() != 0 || p.gate.sync() != nil {
		return
	}
	for l := range lines {
		switch l.kind {
		case gateSync:
			return
		case markers.GateStart:
			p.atStartGate(l)
		}
	}
}

// passStartGate hosts the started moment at the start gate, then lets the
// command go on unless it is to die there.
func (p *proc) passStartGate(l gateLine, o *outputs) {
	c, s := p.c, p.s
	p.atStartGate(l)
	if o.announce && p.holdsAsWorkload() && !p.req.candidate {
		o.out.armSplit(c.arm.OutputBytes)
	}
	if c.arm.Disposition == fault.RemoteKill {
		p.kill("remote-kill: right after the start marker")
	}
	if p.eligible() {
		s.reach(c, p.tc, p.sid, fault.Started)
	} else {
		s.pass(c, p.tc, p.sid, fault.Started)
	}
	switch {
	case p.killed.Load():
	case c.isEnded():
		p.kill("case ended")
	case p.hangupDue():
		p.hangupNow()
	default:
		p.proceed()
	}
}

// holdOutput hosts the output moment the stdout copier asked for while the
// command runs, then lets the copier go on.
func (p *proc) holdOutput(h outputHold) {
	c := p.c
	p.s.reach(c, p.tc, p.sid, fault.Output)
	switch {
	case c.isEnded():
		p.kill("case ended")
	case p.hangupDue():
		p.hangupNow()
	}
	close(h.resume)
}

// passDoneGate lets the command go on from its done gate, once all of its
// output reached the channel, unless it is to die there.
func (p *proc) passDoneGate() {
	switch {
	case p.killed.Load():
	case p.hangupDue():
		p.hangupNow()
	default:
		p.proceed()
	}
}

// transportLost applies the disposition when the session's transport is lost.
func (p *proc) transportLost() {
	// sshd closes a lost session's terminal whatever the command
	// does; only the disposition decides whether it ignores SIGHUP.
	if p.master != nil {
		p.hangUp("transport lost")
	} else if p.c.arm.Disposition == fault.Hangup {
		p.kill("hangup: transport lost")
	}
}

// drainOutputs waits, after the command exited, for its output to reach the
// channel, hosting an output moment still due.
func (p *proc) drainOutputs(o *outputs) {
	// A command without gates can exit with output still in the pipe; the
	// output moment may still be due.
	for waiting := true; waiting; {
		select {
		case h := <-o.holdReq:
			p.s.reach(p.c, p.tc, p.sid, fault.Output)
			close(h.resume)
		case <-o.out.done:
			waiting = false
		}
	}
	if o.errc != nil {
		<-o.errc.done
	}
}

// reportExit announces how the command ended and says it as SSH does.
func (p *proc) reportExit(status syscall.WaitStatus) exitInfo {
	c, s := p.c, p.s
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

// atStartGate records the start gate, and the workload if this is the case's
// first.
func (p *proc) atStartGate(l gateLine) {
	s, c := p.s, p.c
	if p.markerPID.Load() == 0 {
		p.markerPID.Store(int64(l.pid))
	}
	s.emit(control.Event{Kind: control.ProcStartGate, Case: c.id, Conn: p.tc.n, Session: p.sid, PID: p.pid, MarkerID: l.id, MarkerPID: l.pid,
		OutputCaptured: outputCaptured(p.pid, l.pid)})
	if c.workloadSeen.CompareAndSwap(false, true) {
		p.workload.Store(true)
		s.emit(control.Event{Kind: control.Workload, Case: c.id, Conn: p.tc.n, Session: p.sid, PID: p.pid,
			Ref: p.req.seq, Step: p.req.step, Request: p.req.kind, MarkerID: l.id, MarkerPID: l.pid})
	}
}

// outputCaptured reports whether the markers' shell (marker) has no
// descriptor on what the session's process (leader) writes its stdout to: a
// wrapper between them captures the workload's output. Every descriptor is
// looked at, not only 1: at the start gate the shell may still have its
// stdout on the gate FIFO, the real one saved on another descriptor. Where
// /proc cannot tell, the output is not taken for captured.
func outputCaptured(leader, marker int) bool {
	if leader == marker {
		return false
	}
	out, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/1", leader))
	if err != nil {
		return false
	}
	dir := fmt.Sprintf("/proc/%d/fd", marker)
	fds, err := os.ReadDir(dir)
	if err != nil || len(fds) == 0 {
		return false
	}
	for _, fd := range fds {
		if target, err := os.Readlink(dir + "/" + fd.Name()); err != nil || target == out {
			return false
		}
	}
	return true
}

// signalForSSH names a signal the way RFC 4254 exit-signal does: without "SIG".
func signalForSSH(sig syscall.Signal) string {
	name := unix.SignalName(sig)
	if len(name) > 3 && name[:3] == "SIG" {
		return name[3:]
	}
	return name
}

// scpUpload is the stdin of an `scp -t` (a legacy upload): it follows the
// protocol's lines ("C<mode> <size> <name>" before each file's bytes, a
// status byte after them) and counts the files' bytes, so that a step case
// can cut the upload after fault.Step.UploadBytes of them. At the cut it
// passes on the bytes before it, holds, and then ends the stream: the rest
// never arrived, and scp is left with a partial file. It records which
// files it began (uploads), for the state a cut upload left.
type scpUpload struct {
	p      *proc
	r      io.Reader
	target string // the command's target, as the case's commands see it

	line      []byte // the protocol line read so far
	left      int64  // bytes of the current file still to come
	afterData bool   // the status byte after a file's bytes is next
	file      string // the current file, as the tool named it
	rel       string // its path in the case's tree ("" outside it)
	relErr    error
	arrived   int64 // bytes of the current file that arrived
	done      bool

	mu    sync.Mutex
	began []string // files begun, in the case's tree
}

// newSCPUpload reads the stdin of p, an `scp -t` command, from r.
func newSCPUpload(p *proc, r io.Reader) *scpUpload {
	target := scpTarget(p.req.command)
	switch {
	case target == "~":
		target = p.c.host.home
	case strings.HasPrefix(target, "~/"):
		target = path.Join(p.c.host.home, target[2:])
	case !path.IsAbs(target):
		target = path.Join(p.c.host.home, target)
	}
	return &scpUpload{p: p, r: r, target: path.Clean(target)}
}

// scpTarget is the target of an `scp -t` command line: its last argument
// that is not an option ("." when there is none).
func scpTarget(command string) string {
	target := "."
	options := true
	for _, a := range strings.Fields(command)[1:] {
		switch {
		case options && a == "--":
			options = false
		case options && strings.HasPrefix(a, "-"):
		default:
			target = strings.Trim(a, `'"`)
		}
	}
	return target
}

// maxSCPLine bounds a protocol line kept for its file's name.
const maxSCPLine = 4096

func (u *scpUpload) Read(b []byte) (int, error) {
	if u.done {
		return 0, io.EOF
	}
	n, err := u.r.Read(b)
	for i := 0; i < n; {
		if u.left > 0 { // the file's bytes
			seg := int(min(int64(n-i), u.left))
			keep, cut := u.p.c.uploadCut(seg)
			u.arrived += int64(keep)
			if cut {
				u.cutHere()
				return i + keep, nil
			}
			u.left -= int64(seg)
			i += seg
			continue
		}
		x := b[i]
		i++
		switch {
		case u.afterData:
			u.afterData = false
		case x == '\n':
			u.header(string(u.line))
			u.line = u.line[:0]
		case len(u.line) < maxSCPLine:
			u.line = append(u.line, x)
		}
	}
	return n, err
}

// header reads a protocol line: a "C" line starts a file.
func (u *scpUpload) header(line string) {
	f := strings.SplitN(line, " ", 3)
	if len(f) != 3 || !strings.HasPrefix(f[0], "C") {
		return
	}
	size, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || size < 0 {
		return
	}
	u.left, u.afterData, u.arrived = size, true, 0
	c := u.p.c
	// The target names the file, or the directory it goes into.
	u.file = u.target
	if rel, err := c.host.treePath(u.target, u.p.s.scratch); err == nil {
		if root, err := os.OpenRoot(c.host.top()); err == nil {
			if info, err := root.Stat(rel); err == nil && info.IsDir() {
				u.file = path.Join(u.target, path.Base(f[2]))
			}
			root.Close()
		}
	}
	u.rel, u.relErr = c.host.treePath(u.file, u.p.s.scratch)
	if u.relErr == nil {
		c.uploads.began(u.rel)
		u.mu.Lock()
		u.began = append(u.began, u.rel)
		u.mu.Unlock()
	}
}

// cutHere records the cut in the current file and holds for it.
func (u *scpUpload) cutHere() {
	p := u.p
	p.c.uploads.cutAt(u.file, u.rel, u.relErr, u.arrived)
	p.s.reach(p.c, p.tc, p.sid, p.c.arm.Moment)
	p.s.emitRequest(p.c, p.tc, p.sid, control.StepSCPUpload, false, p.req.command+": "+control.UploadCut(p.c.arm.Step.UploadBytes))
	u.done = true
}

// finished records that scp -t wrote every file it began: it exited 0.
func (u *scpUpload) finished() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, rel := range u.began {
		u.p.c.uploads.finished(rel)
	}
}
