package server

import (
	"crypto/sha256"
	"encoding/hex"
	"sync/atomic"

	gliderssh "github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/markers"
)

type sessKey struct{}

// sessionState is one session channel of a connection.
type sessionState struct {
	id       int
	tc       *tconn
	execing  atomic.Bool   // an exec request was accepted; handleExec will run
	execDone chan struct{} // closed when handleExec returned
}

// sessionContext gives each session its own value under sessKey while
// sharing everything else with the connection's context.
type sessionContext struct {
	gliderssh.Context
	ss *sessionState
}

func (c *sessionContext) Value(key any) any {
	if key == (sessKey{}) {
		return c.ss
	}
	return c.Context.Value(key)
}

// handleChannel hosts the channel moment, then lets gliderlabs run the
// session's requests.
func (s *Server) handleChannel(srv *gliderssh.Server, conn *gossh.ServerConn, newChan gossh.NewChannel, ctx gliderssh.Context) {
	tc := ctx.Value(connKey{}).(*tconn)
	c := tc.c
	if !c.work.enter() {
		newChan.Reject(gossh.ConnectionFailed, "case ended")
		return
	}
	defer c.work.leave()
	ss := &sessionState{id: c.newSession(), tc: tc, execDone: make(chan struct{})}
	s.emit(control.Event{Kind: control.SessionOpened, Case: c.id, Conn: tc.n, Session: ss.id})
	if c.rejectSession {
		const why = "server busy: too many sessions; retry later"
		s.emit(control.Event{Kind: control.SessionRefused, Case: c.id, Conn: tc.n, Session: ss.id, Detail: "resource-shortage: " + why})
		newChan.Reject(gossh.ResourceShortage, why)
		s.emit(control.Event{Kind: control.SessionClosed, Case: c.id, Conn: tc.n, Session: ss.id})
		return
	}
	s.reach(c, tc, ss.id, fault.Channel)
	if !c.isEnded() && !tc.isLost() {
		gliderssh.DefaultSessionHandler(srv, conn, newChan, &sessionContext{Context: ctx, ss: ss})
	}
	// The requests loop can end before gliderlabs has started the exec
	// handler it accepted; wait for that handler so the session's close is
	// reported after everything it did.
	if ss.execing.Load() {
		<-ss.execDone
	}
	s.emit(control.Event{Kind: control.SessionClosed, Case: c.id, Conn: tc.n, Session: ss.id})
}

// allowSessionRequest runs synchronously in gliderlabs' request loop, before
// the request is answered: only exec is served.
func (s *Server) allowSessionRequest(sess gliderssh.Session, requestType string) bool {
	ss, _ := sess.Context().Value(sessKey{}).(*sessionState)
	if ss == nil {
		return false
	}
	if requestType != "exec" {
		return false
	}
	if c := ss.tc.c; c.denyExec {
		cmd := sess.RawCommand()
		spec, _ := markers.Unwrap(cmd)
		sum := sha256.Sum256([]byte(cmd))
		s.emit(control.Event{Kind: control.ExecRefused, Case: c.id, Conn: ss.tc.n, Session: ss.id,
			Digest: hex.EncodeToString(sum[:]), MarkerID: spec.ID, Detail: "denied: this user may not run this command"})
		return false
	}
	if !ss.tc.c.work.enter() {
		return false
	}
	ss.execing.Store(true)
	return true
}

// handleExec is the gliderlabs handler for an accepted exec request: the exec
// moment, then the command's whole life, then the exit status.
func (s *Server) handleExec(sess gliderssh.Session) {
	ss := sess.Context().Value(sessKey{}).(*sessionState)
	tc, c := ss.tc, ss.tc.c
	defer close(ss.execDone)
	defer c.work.leave() // entered in allowSessionRequest
	// gliderlabs sends exit-status 0 after this handler returns unless the
	// channel is already closed; a command that never ran must not look like
	// one that succeeded.
	defer sess.Close()

	cmd := sess.RawCommand()
	spec, wrapped := markers.Unwrap(cmd)
	sum := sha256.Sum256([]byte(cmd))
	s.emit(control.Event{Kind: control.ExecReceived, Case: c.id, Conn: tc.n, Session: ss.id,
		Digest: hex.EncodeToString(sum[:]), MarkerID: spec.ID})
	defer s.emit(control.Event{Kind: control.ExecFinished, Case: c.id, Conn: tc.n, Session: ss.id})

	s.reach(c, tc, ss.id, fault.Exec)
	if c.isEnded() {
		return
	}
	if c.arm.Disposition == fault.Hangup && tc.isLost() {
		s.emit(control.Event{Kind: control.ExecSkipped, Case: c.id, Conn: tc.n, Session: ss.id,
			Detail: "hangup: transport lost before the command started"})
		return
	}
	p, err := s.spawn(c, tc, ss.id, cmd, wrapped)
	if err != nil {
		s.emit(control.Event{Kind: control.ServerProblem, Case: c.id, Conn: tc.n, Session: ss.id, Detail: "spawn: " + err.Error()})
		s.sendExit(sess, c, tc, ss.id, exitInfo{code: 127})
		return
	}
	info := p.run(sess)
	s.reach(c, tc, ss.id, fault.Finished)
	s.sendExit(sess, c, tc, ss.id, info)
}

// exitInfo is how a command ended: an exit code, or a signal name.
type exitInfo struct {
	code   int
	signal string // "KILL", ... when killed by a signal
}

// sendExit writes exit-status (or exit-signal), holds at the exit-status
// moment, then closes the channel. It does not use gliderlabs' Session.Exit,
// which closes the channel right after the status with no room for a hold.
func (s *Server) sendExit(sess gliderssh.Session, c *caseState, tc *tconn, sid int, info exitInfo) {
	var err error
	if info.signal != "" {
		msg := struct {
			Signal     string
			CoreDumped bool
			Error      string
			Lang       string
		}{Signal: info.signal}
		_, err = sess.SendRequest("exit-signal", false, gossh.Marshal(&msg))
	} else {
		status := struct{ Status uint32 }{uint32(info.code)}
		_, err = sess.SendRequest("exit-status", false, gossh.Marshal(&status))
	}
	if err == nil {
		ev := control.Event{Kind: control.ExitSent, Case: c.id, Conn: tc.n, Session: sid, Signal: info.signal}
		if info.signal == "" {
			code := info.code
			ev.ExitCode = &code
		}
		s.emit(ev)
	}
	s.reach(c, tc, sid, fault.ExitStatus)
	sess.Close()
}
