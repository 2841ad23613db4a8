package server

import (
	"sync"
	"sync/atomic"

	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/markers"
)

// caseState is everything the server knows about one case run.
type caseState struct {
	id    string
	arm   control.Arm
	probe bool        // the rig's probe
	host  caseHost    // the filesystem its commands and SFTP see (host.go)
	fired atomic.Bool // the armed moment was reached once; later ones pass

	// Credentials and refusals of this case (see control.Request).
	keys          map[string]bool // accepted for this case only, unless revoked
	ca            gossh.PublicKey // user certificate authority, or nil
	denyExec      bool
	rejectSession bool
	refusePTY     bool
	revoked       atomic.Bool
	clockOffset   atomic.Int64 // added to now when checking certificates (expire)

	endOnce sync.Once
	ended   chan struct{} // closed when teardown starts
	work    *tracker      // the case's connection, channel and exec handlers

	steps        atomic.Int64 // the conversation's steps so far
	uploaded     atomic.Int64 // bytes of uploads so far, for a step that cuts one
	uploads      uploads      // what the uploads did to the host (upload.go)
	execs        atomic.Int64 // exec and shell requests so far
	workloadSeen atomic.Bool  // a command of the case passed its start gate

	mu          sync.Mutex
	conns       map[int]*tconn
	procs       map[int]*proc // by pid, while not reaped
	nextSession int
	requests    map[string]int // requests so far, by name (fault.Step.Occurrence)
	relays      map[int]*relay // the jump host's open tunnels, by local port (jump.go)
}

func newCase(id string, arm control.Arm, probe bool) *caseState {
	return &caseState{
		id:       id,
		arm:      arm,
		probe:    probe,
		keys:     map[string]bool{},
		ended:    make(chan struct{}),
		work:     newTracker(),
		conns:    map[int]*tconn{},
		procs:    map[int]*proc{},
		requests: map[string]int{},
		relays:   map[int]*relay{},
	}
}

// unwrap recognises a marker-wrapped command; a per-host one
// (markers.WrapPerHost) carries this case's id, which the server gives it.
func (c *caseState) unwrap(cmd string) (markers.Spec, bool) {
	spec, ok := markers.Unwrap(cmd)
	if spec.PerHost {
		spec.ID = c.id
	}
	return spec, ok
}

func (c *caseState) isEnded() bool {
	select {
	case <-c.ended:
		return true
	default:
		return false
	}
}

func (c *caseState) newSession() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextSession++
	return c.nextSession
}

// countRequest counts a request of the conversation by name and reports
// whether it is the step the case is armed to hold at.
func (c *caseState) countRequest(name string) (armedStep bool) {
	c.mu.Lock()
	c.requests[name]++
	n := c.requests[name]
	c.mu.Unlock()
	st := c.arm.Step
	return st != nil && st.UploadBytes == 0 && st.Request == name && st.Occurrence == n
}

// uploadCut is where an upload of n more bytes must be cut for a step case
// armed after fault.Step.UploadBytes: it returns how many of the n bytes
// arrive before the cut, and whether the cut lands within them. Every
// upload of the case counts (SFTP writes and the stdin of scp -t).
func (c *caseState) uploadCut(n int) (keep int, cut bool) {
	st := c.arm.Step
	if st == nil || st.UploadBytes == 0 || c.fired.Load() {
		c.uploaded.Add(int64(n))
		return n, false
	}
	before := c.uploaded.Add(int64(n)) - int64(n)
	if before+int64(n) < st.UploadBytes {
		return n, false
	}
	return int(max(st.UploadBytes-before, 0)), true
}

// hold is one barrier: a moment the server waits at until the rig releases it.
type hold struct {
	caseID string
	tc     *tconn // the held connection
	sid    int    // and session, or 0
	moment fault.Moment
	once   sync.Once
	ch     chan struct{}

	mu    sync.Mutex
	fault fault.Cut // the far side's fault the rig made at it (farfault.go)
}

func (h *hold) release() { h.once.Do(func() { close(h.ch) }) }

func (h *hold) setFault(f fault.Cut) {
	h.mu.Lock()
	h.fault = f
	h.mu.Unlock()
}

// madeFault is the far side's fault made at the hold, or 0.
func (h *hold) madeFault() fault.Cut {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fault
}

// pass announces that connection tc reached moment m where the moment cannot
// hold: a request or command that is not the case's workload.
func (s *Server) pass(c *caseState, tc *tconn, sid int, m fault.Moment) {
	s.emit(control.Event{Kind: control.MomentReached, Case: c.id, Conn: tc.n, Session: sid, Moment: m, Sent: tc.sent.Load()})
}

// armedOn says the case's moment may hold on connection tc: a moment armed
// at a later connection of the tool's conversation (a step whose request
// is a connection: the handshake or authentication of the connection that
// carries an uploaded workload) holds on that connection only.
func (c *caseState) armedOn(tc *tconn) bool {
	if c.arm.Jump != nil && tc.relay == nil {
		// A case with a jump host holds on the target's connections
		// only, whichever hop it cuts.
		return false
	}
	st := c.arm.Step
	return st == nil || st.Request != control.StepConnection || tc.stepArmed
}

// reach announces that connection tc (and session sid, if any) reached moment m.
// If m is the case's armed moment and this is its first occurrence, the server
// holds here until the rig releases the hold, the case ends or the server
// closes. It reports whether it held.
func (s *Server) reach(c *caseState, tc *tconn, sid int, m fault.Moment) bool {
	held, _ := s.reachFault(c, tc, sid, m)
	return held
}

// reachFault is reach, and says which of the far side's faults the rig
// made at the hold (0 for none).
func (s *Server) reachFault(c *caseState, tc *tconn, sid int, m fault.Moment) (bool, fault.Cut) {
	ev := control.Event{
		Kind:    control.MomentReached,
		Case:    c.id,
		Conn:    tc.n,
		Session: sid,
		Moment:  m,
		Sent:    tc.sent.Load(),
	}
	if c.arm.Moment != m || !c.armedOn(tc) || !c.fired.CompareAndSwap(false, true) {
		s.emit(ev)
		return false, 0
	}
	ev.Hold = true
	ev.HeldCall = c.arm.HoldCommand != ""
	s.holdVia(c, tc, &ev)
	h := &hold{caseID: c.id, tc: tc, sid: sid, moment: m, ch: make(chan struct{})}
	seq := s.emitHold(ev, h)
	select {
	case <-h.ch:
	case <-c.ended:
	case <-s.closing:
	}
	s.mu.Lock()
	delete(s.holds, seq)
	s.mu.Unlock()
	s.emit(control.Event{Kind: control.Released, Case: c.id, Conn: tc.n, Session: sid, Moment: m, Ref: seq})
	return true, h.madeFault()
}

// endCase tears a case down: holds end, process groups are killed, connections
// close, and once every handler of the case returned, CaseEnded is emitted and
// the case is forgotten.
func (s *Server) endCase(c *caseState, why string) {
	c.endOnce.Do(func() {
		close(c.ended)
		c.mu.Lock()
		for _, p := range c.procs {
			p.kill("case ended: " + why)
		}
		conns := make([]*tconn, 0, len(c.conns))
		for _, tc := range c.conns {
			conns = append(conns, tc)
		}
		c.mu.Unlock()
		for _, tc := range conns {
			tc.closeByServer()
		}
		<-c.work.close()
		// Every command of the case has been reaped: what a cut upload
		// left is final, and its host goes.
		s.emitUploadState(c)
		if c.host.tree != "" {
			if err := c.host.close(); err != nil {
				s.emit(control.Event{Kind: control.ServerProblem, Case: c.id, Detail: "remove the case's host: " + err.Error()})
			}
		}
		s.mu.Lock()
		delete(s.cases, c.id)
		s.mu.Unlock()
		s.emit(control.Event{Kind: control.CaseEnded, Case: c.id, Detail: why})
	})
}
