package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"syscall"

	"github.com/creack/pty"
	gliderssh "github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
)

// sessionState is one session channel of a connection, served the way
// OpenSSH's sshd serves one: any number of pty-req, window-change, env and
// signal requests around one exec, shell or subsystem request.
type sessionState struct {
	s  *Server
	c  *caseState
	tc *tconn
	id int
	ch gossh.Channel

	mu      sync.Mutex
	pty     *ptyRequest // an accepted pty-req
	env     []string    // accepted env requests, NAME=value
	started bool        // an exec, shell or subsystem request was accepted
	proc    *proc       // the running command, for signal and window-change
	handler chan struct{}
}

// ptyRequest is the payload of pty-req (RFC 4254 section 6.2).
type ptyRequest struct {
	Term          string
	Columns, Rows uint32
	Width, Height uint32
	Modes         string
}

func (r *ptyRequest) winsize() *pty.Winsize {
	return &pty.Winsize{Cols: uint16(r.Columns), Rows: uint16(r.Rows), X: uint16(r.Width), Y: uint16(r.Height)}
}

// execRequest is an accepted exec or shell request.
type execRequest struct {
	kind    string // "exec" or "shell"
	command string // empty for a shell: its commands arrive on stdin
	seq     uint64 // its Request event
	step    int
	ordinal int // among the case's exec and shell requests, from 1
	// candidate: the exec moment holds here (see control.Arm.WorkloadRequest).
	candidate bool
}

// emitRequest records one step of the conversation. armedStep says the
// case is armed to hold at this request (fault.Step): the caller holds with
// holdStep before it answers.
func (s *Server) emitRequest(c *caseState, tc *tconn, sid int, name string, accepted bool, detail string) (seq uint64, step int, armedStep bool) {
	step = int(c.steps.Add(1))
	armedStep = c.countRequest(name)
	seq = s.emit(control.Event{Kind: control.RequestSeen, Case: c.id, Conn: tc.n, Session: sid,
		Request: name, Step: step, Accepted: &accepted, Detail: detail})
	return seq, step, armedStep
}

// holdStep holds at the step a case is armed for, when armed says this
// request is it: after the server received it, before it answers.
func (s *Server) holdStep(c *caseState, tc *tconn, sid int, armed bool) {
	if armed {
		s.reach(c, tc, sid, c.arm.Moment)
	}
}

// handleGlobal answers connection-level requests as sshd does: it accepts
// no-more-sessions@openssh.com and refuses the rest (keepalive@openssh.com
// included: any answer tells the client the server is alive).
func (s *Server) handleGlobal(ctx gliderssh.Context, _ *gliderssh.Server, req *gossh.Request) (bool, []byte) {
	tc := ctx.Value(connKey{}).(*tconn)
	ok := req.Type == "no-more-sessions@openssh.com"
	_, _, armed := s.emitRequest(tc.c, tc, 0, control.StepGlobal+req.Type, ok, "")
	s.holdStep(tc.c, tc, 0, armed)
	return ok, nil
}

// handleChannel hosts the channel moment, then serves the session's requests.
func (s *Server) handleChannel(_ *gliderssh.Server, _ *gossh.ServerConn, newChan gossh.NewChannel, ctx gliderssh.Context) {
	tc := ctx.Value(connKey{}).(*tconn)
	c := tc.c
	if !c.work.enter() {
		newChan.Reject(gossh.ConnectionFailed, "case ended")
		return
	}
	defer c.work.leave()
	ss := &sessionState{s: s, c: c, tc: tc, id: c.newSession()}
	s.emit(control.Event{Kind: control.SessionOpened, Case: c.id, Conn: tc.n, Session: ss.id})
	defer s.emit(control.Event{Kind: control.SessionClosed, Case: c.id, Conn: tc.n, Session: ss.id})
	if c.rejectSession {
		const why = "server busy: too many sessions; retry later"
		s.emitRequest(c, tc, ss.id, control.StepSession, false, "resource-shortage: "+why)
		s.emit(control.Event{Kind: control.SessionRefused, Case: c.id, Conn: tc.n, Session: ss.id, Detail: "resource-shortage: " + why})
		newChan.Reject(gossh.ResourceShortage, why)
		return
	}
	_, _, armed := s.emitRequest(c, tc, ss.id, control.StepSession, true, "")
	s.holdStep(c, tc, ss.id, armed)
	s.reach(c, tc, ss.id, fault.Channel)
	if c.isEnded() || tc.isLost() {
		newChan.Reject(gossh.ConnectionFailed, "case ended")
		return
	}
	ch, reqs, err := newChan.Accept()
	if err != nil {
		return
	}
	ss.ch = ch
	for req := range reqs {
		ss.serve(req)
	}
	ss.mu.Lock()
	h := ss.handler
	ss.mu.Unlock()
	if h != nil {
		<-h
	}
	ch.Close()
}

// acceptEnv is a default sshd's AcceptEnv (Debian's sshd_config): LANG and LC_*.
func acceptEnv(name string) bool {
	return name == "LANG" || strings.HasPrefix(name, "LC_")
}

// sshdSignals are the signals sshd passes on in a signal request.
var sshdSignals = map[string]syscall.Signal{
	"ABRT": syscall.SIGABRT, "ALRM": syscall.SIGALRM, "FPE": syscall.SIGFPE, "HUP": syscall.SIGHUP,
	"ILL": syscall.SIGILL, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL, "PIPE": syscall.SIGPIPE,
	"QUIT": syscall.SIGQUIT, "SEGV": syscall.SIGSEGV, "TERM": syscall.SIGTERM, "USR1": syscall.SIGUSR1,
	"USR2": syscall.SIGUSR2,
}

// serve answers one channel request, synchronously, as sshd's request loop
// does; exec, shell and subsystem start a handler that outlives the answer.
func (ss *sessionState) serve(req *gossh.Request) {
	s, c, tc := ss.s, ss.c, ss.tc
	c.delayAnswer() // delay.go
	ok, detail := false, ""
	record := true
	armed := false   // this request is the step the case holds at
	var start func() // an accepted exec, shell or subsystem: its handler
	ss.mu.Lock()
	switch req.Type {
	case "pty-req":
		ok, detail = ss.answerPTY(req.Payload)
	case "window-change":
		ok, detail = ss.answerWindowChange(req.Payload)
	case "env":
		ok, detail = ss.answerEnv(req.Payload)
	case "signal":
		ok, detail = ss.answerSignal(req.Payload)
	case "exec", "shell":
		record = false
		ok, armed, start = ss.answerExec(req)
	case "subsystem":
		record = false
		ok, armed, start = ss.answerSubsystem(req)
	}
	ss.mu.Unlock()
	if record {
		_, _, armed = s.emitRequest(c, tc, ss.id, req.Type, ok, detail)
	}
	s.holdStep(c, tc, ss.id, armed)
	if start != nil {
		req.Reply(true, nil)
		start()
		return
	}
	if !ok || !record {
		if !ok {
			req.Reply(false, nil)
		}
		return
	}
	req.Reply(true, nil)
}

// answerPTY decides a pty-req and what the conversation records of it;
// ss.mu is held.
func (ss *sessionState) answerPTY(payload []byte) (ok bool, detail string) {
	var r ptyRequest
	switch {
	case gossh.Unmarshal(payload, &r) != nil:
		detail = "malformed pty-req"
	case ss.c.refusePTY || ss.s.cfg.RefusePTY:
		detail = "refused: the server does not allocate terminals (PermitTTY no)"
	case ss.started || ss.pty != nil:
		detail = "refused: too late or already allocated"
	default:
		ok, ss.pty = true, &r
		detail = fmt.Sprintf("%s %dx%d", r.Term, r.Columns, r.Rows)
	}
	return ok, detail
}

// answerWindowChange resizes the session's terminal; ss.mu is held.
func (ss *sessionState) answerWindowChange(payload []byte) (ok bool, detail string) {
	var w struct{ Columns, Rows, Width, Height uint32 }
	if gossh.Unmarshal(payload, &w) == nil && ss.pty != nil {
		ok = true
		ss.pty.Columns, ss.pty.Rows, ss.pty.Width, ss.pty.Height = w.Columns, w.Rows, w.Width, w.Height
		detail = fmt.Sprintf("%dx%d", w.Columns, w.Rows)
		if p := ss.proc; p != nil && p.master != nil {
			pty.Setsize(p.master, ss.pty.winsize())
		}
	}
	return ok, detail
}

// answerEnv accepts an env request as sshd's AcceptEnv does; ss.mu is held.
func (ss *sessionState) answerEnv(payload []byte) (ok bool, detail string) {
	var kv struct{ Name, Value string }
	if gossh.Unmarshal(payload, &kv) == nil {
		detail = kv.Name
		if acceptEnv(kv.Name) && !ss.started && !strings.ContainsRune(kv.Name, '=') {
			ok = true
			ss.env = append(ss.env, kv.Name+"="+kv.Value)
		}
	}
	return ok, detail
}

// answerSignal passes a signal request on to the running command; ss.mu is
// held.
func (ss *sessionState) answerSignal(payload []byte) (ok bool, detail string) {
	var sig struct{ Signal string }
	if gossh.Unmarshal(payload, &sig) == nil {
		detail = sig.Signal
		if n, known := sshdSignals[sig.Signal]; known && ss.proc != nil && !ss.proc.reaped.Load() {
			ok = syscall.Kill(ss.proc.pid, n) == nil
		}
	}
	return ok, detail
}

// answerExec decides an exec or shell request and records it; an accepted
// one's handler is start, and armed says the case holds at it. ss.mu is held.
func (ss *sessionState) answerExec(req *gossh.Request) (ok, armed bool, start func()) {
	s, c, tc := ss.s, ss.c, ss.tc
	r := &execRequest{kind: req.Type}
	if req.Type == "exec" {
		var cmd struct{ Command string }
		if gossh.Unmarshal(req.Payload, &cmd) != nil {
			s.emitRequest(c, tc, ss.id, req.Type, false, "malformed exec request")
			return false, false, nil
		}
		r.command = cmd.Command
	}
	if ss.started {
		s.emitRequest(c, tc, ss.id, req.Type, false, "refused: the session already runs something")
		return false, false, nil
	}
	if c.denyExec {
		spec, _ := c.unwrap(r.command)
		sum := sha256.Sum256([]byte(r.command))
		s.emitRequest(c, tc, ss.id, req.Type, false, "denied")
		s.emit(control.Event{Kind: control.ExecRefused, Case: c.id, Conn: tc.n, Session: ss.id,
			Digest: hex.EncodeToString(sum[:]), MarkerID: spec.ID, OperationID: spec.OperationID, Detail: "denied: this user may not run this command"})
		return false, false, nil
	}
	if !c.work.enter() {
		s.emitRequest(c, tc, ss.id, req.Type, false, "case ended")
		return false, false, nil
	}
	r.ordinal = int(c.execs.Add(1))
	if h := c.arm.HoldCommand; h != "" {
		sum := sha256.Sum256([]byte(r.command))
		r.candidate = r.kind == "exec" && hex.EncodeToString(sum[:]) == h
	} else if n := c.arm.WorkloadRequest; n > 0 {
		r.candidate = r.ordinal == n
	} else {
		_, wrapped := c.unwrap(r.command)
		r.candidate = wrapped || r.kind == "shell"
	}
	r.seq, r.step, armed = s.emitRequest(c, tc, ss.id, req.Type, true, execDetail(r.command))
	ss.started, ss.handler = true, make(chan struct{})
	return true, armed, func() { go ss.runCommand(r) }
}

// answerSubsystem decides a subsystem request (sftp only) and records it; an
// accepted one's handler is start, and armed says the case holds at it.
// ss.mu is held.
func (ss *sessionState) answerSubsystem(req *gossh.Request) (ok, armed bool, start func()) {
	s, c, tc := ss.s, ss.c, ss.tc
	var sub struct{ Name string }
	switch {
	case gossh.Unmarshal(req.Payload, &sub) != nil:
		s.emitRequest(c, tc, ss.id, req.Type, false, "malformed subsystem request")
	case sub.Name != "sftp" || ss.started:
		s.emitRequest(c, tc, ss.id, req.Type, false, sub.Name)
	case !c.work.enter():
		s.emitRequest(c, tc, ss.id, req.Type, false, sub.Name+": case ended")
	default:
		_, _, armed = s.emitRequest(c, tc, ss.id, req.Type, true, sub.Name)
		ok, ss.started, ss.handler = true, true, make(chan struct{})
		start = func() { go ss.runSFTP() }
	}
	return ok, armed, start
}

// execDetail is what the conversation records of an exec request's command:
// "scp -t" or "scp -f" for a legacy scp transfer (an upload's bytes can be
// cut there), else nothing. The command itself differs per case (its marker
// id) and may carry what the tool did not mean to publish.
func execDetail(command string) string {
	if f := strings.Fields(command); len(f) > 1 && f[0] == "scp" {
		for _, a := range f[1:] {
			if a == "-t" || a == "-f" {
				return "scp " + a
			}
		}
	}
	return ""
}

// runCommand is an accepted exec or shell request: the exec moment, then the
// command's whole life, then its exit status.
func (ss *sessionState) runCommand(r *execRequest) {
	s, c, tc := ss.s, ss.c, ss.tc
	defer close(ss.handler)
	defer c.work.leave() // entered in serve
	// A command that never ran must not look like one that succeeded: the
	// channel closes without an exit status.
	defer ss.ch.Close()

	spec, _ := c.unwrap(r.command)
	ev := control.Event{Kind: control.ExecReceived, Case: c.id, Conn: tc.n, Session: ss.id, MarkerID: spec.ID, OperationID: spec.OperationID, Ref: r.seq}
	if r.kind == "exec" {
		sum := sha256.Sum256([]byte(r.command))
		ev.Digest = hex.EncodeToString(sum[:])
	} else {
		ev.Detail = "shell: commands on stdin"
	}
	s.emit(ev)
	finished := false
	defer func() {
		if !finished {
			s.emit(control.Event{Kind: control.ExecFinished, Case: c.id, Conn: tc.n, Session: ss.id})
		}
	}()

	if r.candidate {
		s.reach(c, tc, ss.id, fault.Exec)
	} else {
		s.pass(c, tc, ss.id, fault.Exec)
	}
	if c.isEnded() {
		return
	}
	if tc.dead.Load() {
		s.emit(control.Event{Kind: control.ExecSkipped, Case: c.id, Conn: tc.n, Session: ss.id,
			Detail: "the server crashed, or its host went down, before the command started"})
		return
	}
	if c.arm.Disposition == fault.Hangup && tc.isLost() {
		s.emit(control.Event{Kind: control.ExecSkipped, Case: c.id, Conn: tc.n, Session: ss.id,
			Detail: "hangup: transport lost before the command started"})
		return
	}
	ss.mu.Lock()
	sp := spawnSpec{argv: []string{s.shell}, env: ss.env}
	if r.kind == "exec" {
		sp.argv = []string{s.shell, "-c", r.command}
	}
	if ss.pty != nil {
		t := *ss.pty
		sp.pty = &t
		sp.env = append(append([]string{}, ss.env...), "TERM="+t.Term)
		sp.ignoreHUP = c.arm.Disposition == fault.Survive
	}
	ss.mu.Unlock()
	p, err := s.spawn(c, tc, ss.id, r, sp)
	if err != nil {
		s.emit(control.Event{Kind: control.ServerProblem, Case: c.id, Conn: tc.n, Session: ss.id, Detail: "spawn: " + err.Error()})
		s.sendExit(ss.ch, c, tc, ss.id, exitInfo{code: 127}, r.candidate)
		return
	}
	ss.mu.Lock()
	ss.proc = p
	ss.mu.Unlock()
	info := p.run(ss.ch)
	var withheld fault.Cut
	if p.eligible() {
		_, withheld = s.reachFault(c, tc, ss.id, fault.Finished)
	} else {
		s.pass(c, tc, ss.id, fault.Finished)
	}
	switch {
	case tc.dead.Load():
		// A dead server sends nothing; its connection is gone.
	case withheld == fault.NoExitStatus || withheld == fault.EOFOnly:
		s.withholdExit(ss.ch, c, tc, ss.id, info, withheld)
	default:
		s.sendExit(ss.ch, c, tc, ss.id, info, p.eligible())
	}
	s.emit(control.Event{Kind: control.ExecFinished, Case: c.id, Conn: tc.n, Session: ss.id})
	finished = true
	ss.ch.Close()
	<-p.stdinDone
}

// exitInfo is how a command ended: an exit code, or a signal name.
type exitInfo struct {
	code   int
	signal string // "KILL", ... when killed by a signal
}

// sendExit writes exit-status (or exit-signal), holds at the exit-status
// moment when the command may, then closes the channel.
func (s *Server) sendExit(ch gossh.Channel, c *caseState, tc *tconn, sid int, info exitInfo, holds bool) {
	var err error
	if info.signal != "" {
		msg := struct {
			Signal     string
			CoreDumped bool
			Error      string
			Lang       string
		}{Signal: info.signal}
		_, err = ch.SendRequest("exit-signal", false, gossh.Marshal(&msg))
	} else {
		status := struct{ Status uint32 }{uint32(info.code)}
		_, err = ch.SendRequest("exit-status", false, gossh.Marshal(&status))
	}
	if err == nil {
		ev := control.Event{Kind: control.ExitSent, Case: c.id, Conn: tc.n, Session: sid, Signal: info.signal}
		if info.signal == "" {
			code := info.code
			ev.ExitCode = &code
		}
		s.emit(ev)
	}
	if holds {
		s.reach(c, tc, sid, fault.ExitStatus)
	} else {
		s.pass(c, tc, sid, fault.ExitStatus)
	}
	ch.Close()
}
