package server

import (
	"errors"
	"fmt"
	"net"

	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
)

// The far side's faults (fault.ServerSide): the rig asks for one at a hold
// (control.OpFault) and releases the hold afterwards, so the fault lands at
// the held moment exactly as a transport cut does.

// makeFault makes fault f at hold seq of case caseID.
func (s *Server) makeFault(caseID string, seq uint64, f fault.Cut) error {
	if !f.ServerSide() {
		return fmt.Errorf("%v is not a fault the server makes (valid: %v)", f, fault.ServerCuts())
	}
	s.mu.Lock()
	h := s.holds[seq]
	s.mu.Unlock()
	if h == nil || h.caseID != caseID {
		return fmt.Errorf("no hold %d for case %q", seq, caseID)
	}
	if !f.FitsMoment(h.moment) {
		return fmt.Errorf("%v cannot be made at %s", f, h.moment)
	}
	c := h.tc.c
	var detail string
	switch f {
	case fault.ServerCrash:
		n := s.downConns(c, true)
		detail = fmt.Sprintf("the server serving the case crashed: %d connection(s) reset, no session of them gets an exit status", n)
	case fault.Reboot:
		killed := c.killAll("reboot: the host went down")
		n := s.downConns(c, false)
		detail = fmt.Sprintf("the case's host went down: %d process group(s) killed, %d connection(s) gone without a word to the tool", killed, n)
	case fault.NoExitStatus, fault.EOFOnly:
		detail = "the held session's exit status will be withheld: " + f.String()
	}
	h.setFault(f)
	s.emit(control.Event{Kind: control.ServerFaulted, Case: c.id, Conn: h.tc.n, Session: h.sid, Moment: h.moment, Ref: seq, Detail: f.String() + ": " + detail})
	return nil
}

// downConns ends every connection of case c as its server's death does: no
// session of them sends anything again, and each is closed, with an RST
// when reset (a crashed process's sockets with unread data), else as the
// rig's cutter has already silenced them (a host that went down). It
// returns how many it ended.
func (s *Server) downConns(c *caseState, reset bool) int {
	c.mu.Lock()
	conns := make([]*tconn, 0, len(c.conns))
	for _, tc := range c.conns {
		conns = append(conns, tc)
	}
	c.mu.Unlock()
	for _, tc := range conns {
		tc.dead.Store(true)
		if reset {
			if t, ok := tc.Conn.(*net.TCPConn); ok {
				t.SetLinger(0)
			}
		}
		tc.closeByServer()
	}
	return len(conns)
}

// killAll kills every process group of the case, whatever its disposition,
// and returns how many it killed.
func (c *caseState) killAll(why string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		p.kill(why)
	}
	return len(c.procs)
}

// withholdExit ends a command's channel without its exit status, as fault f
// says: EOF and close (NoExitStatus), or EOF and then silence until the
// transport or the case ends (EOFOnly).
func (s *Server) withholdExit(ch gossh.Channel, c *caseState, tc *tconn, sid int, info exitInfo, f fault.Cut) {
	had := fmt.Sprintf("exit status %d", info.code)
	if info.signal != "" {
		had = "exit signal " + info.signal
	}
	err := ch.CloseWrite()
	switch f {
	case fault.NoExitStatus:
		s.emit(control.Event{Kind: control.ExitWithheld, Case: c.id, Conn: tc.n, Session: sid, Detail: withheldDetail("EOF and close, no exit status", had, err)})
		ch.Close()
	case fault.EOFOnly:
		s.emit(control.Event{Kind: control.ExitWithheld, Case: c.id, Conn: tc.n, Session: sid, Detail: withheldDetail("EOF, then nothing", had, err)})
		select {
		case <-tc.lost:
		case <-c.ended:
		case <-s.closing:
		}
		ch.Close()
	}
}

func withheldDetail(what, had string, err error) string {
	d := what + " (the command's " + had + " withheld)"
	if err != nil && !errors.Is(err, net.ErrClosed) {
		d += "; EOF: " + err.Error()
	}
	return d
}
