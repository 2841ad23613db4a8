package control

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Handler serves requests from the authenticated rig.
type Handler interface {
	// Handle answers one request. It runs on the connection's reader, so it
	// must not block on anything the rig does next (a release arrives on the
	// same connection).
	Handle(Request) error
	// Disconnected is called when the rig's control connection ends, so the
	// server can end every case: nobody is left to release a hold.
	Disconnected()
}

// Server accepts one authenticated control connection at a time.
type Server struct {
	ln      net.Listener
	token   []byte
	ready   Ready
	handler Handler

	emitMu  sync.Mutex // keeps events in the order Emit was called
	mu      sync.Mutex
	peer    *peer // the authenticated rig, or nil
	closed  bool
	wg      sync.WaitGroup
	dropped int // events emitted while no rig was connected
}

type peer struct {
	conn net.Conn
	out  chan envelope
	done chan struct{}
}

// authTimeout bounds how long an unauthenticated connection may take.
const authTimeout = 10 * time.Second

// outQueue is how many messages may wait for the wire before Emit blocks.
const outQueue = 4096

// NewServer returns a control server on ln; call Serve to accept.
func NewServer(ln net.Listener, token []byte, ready Ready, h Handler) *Server {
	ready.Version = ProtocolVersion
	return &Server{ln: ln, token: token, ready: ready, handler: h}
}

// Addr is the listening address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts connections until Close. It returns nil after Close.
func (s *Server) Serve() error {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			return fmt.Errorf("control: accept: %w", err)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
		}()
	}
}

// Emit queues an event for the rig. Events emitted while no rig is connected
// are dropped and counted.
func (s *Server) Emit(e Event) {
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	s.mu.Lock()
	p := s.peer
	if p == nil {
		s.dropped++
	}
	s.mu.Unlock()
	if p == nil {
		return
	}
	// The queue is deep, so this only blocks when the rig stops reading.
	select {
	case p.out <- envelope{Event: &e}:
	case <-p.done:
	}
}

// Close stops accepting, closes the rig's connection and waits for the
// connection goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	p := s.peer
	s.mu.Unlock()
	err := s.ln.Close()
	if p != nil {
		p.conn.Close()
	}
	s.wg.Wait()
	return err
}

// serveConn authenticates the rig on c, attaches it as the peer and serves
// its requests until the connection ends.
func (s *Server) serveConn(c net.Conn) {
	defer c.Close()
	enc := json.NewEncoder(c)
	dec := json.NewDecoder(bufio.NewReader(c))
	if !s.authenticate(c, enc, dec) {
		return
	}
	p := s.attach(c, enc)
	if p == nil {
		return
	}

	ready := s.ready
	if err := enc.Encode(envelope{Ready: &ready}); err != nil {
		s.detach(p)
		return
	}

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		writeOut(c, p)
	}()

	s.readRequests(dec, p)
	s.detach(p)
	<-writerDone
	s.handler.Disconnected()
}

// authenticate challenges the other end of c with a nonce and checks its
// MAC with the token, within authTimeout; false means c must be dropped.
func (s *Server) authenticate(c net.Conn, enc *json.Encoder, dec *json.Decoder) bool {
	var nonce [32]byte
	rand.Read(nonce[:])
	c.SetDeadline(time.Now().Add(authTimeout))
	if err := enc.Encode(envelope{Hello: &hello{Version: ProtocolVersion, Nonce: hex.EncodeToString(nonce[:])}}); err != nil {
		return false
	}
	var first envelope
	if err := dec.Decode(&first); err != nil || first.Auth == nil {
		enc.Encode(envelope{Error: "control: expected auth message"})
		return false
	}
	got, err := hex.DecodeString(first.Auth.MAC)
	if err != nil || !hmac.Equal(got, mac(s.token, nonce[:])) {
		enc.Encode(envelope{Error: "control: authentication failed"})
		return false
	}
	c.SetDeadline(time.Time{})
	return true
}

// attach makes the authenticated rig on c the server's peer, or tells it
// why not and returns nil.
func (s *Server) attach(c net.Conn, enc *json.Encoder) *peer {
	p := &peer{conn: c, out: make(chan envelope, outQueue), done: make(chan struct{})}
	s.mu.Lock()
	if s.closed || s.peer != nil {
		s.mu.Unlock()
		enc.Encode(envelope{Error: "control: another rig is already connected"})
		return nil
	}
	s.peer = p
	s.mu.Unlock()
	return p
}

// writeOut writes p's queued messages to c until p is detached or a write
// fails, which closes c.
func writeOut(c net.Conn, p *peer) {
	// Messages are buffered and written when none is left waiting: a
	// burst of events (a case's connection arriving, its command
	// starting) costs one write, and the last message of a burst
	// leaves at once, as if unbuffered. A hold and a reply leave at
	// once whatever follows them: someone waits on each.
	bw := bufio.NewWriter(c)
	benc := json.NewEncoder(bw)
	for {
		select {
		case m := <-p.out:
			err := benc.Encode(m)
			if err == nil && (len(p.out) == 0 || m.Reply != nil || m.Event != nil && m.Event.Hold) {
				err = bw.Flush()
			}
			if err != nil {
				c.Close()
				return
			}
		case <-p.done:
			return
		}
	}
}

// readRequests hands each request from the rig to the handler and queues
// its reply, until the connection ends.
func (s *Server) readRequests(dec *json.Decoder, p *peer) {
	for {
		var m envelope
		if err := dec.Decode(&m); err != nil {
			break
		}
		if m.Request == nil {
			continue
		}
		req := *m.Request
		rep := Reply{ID: req.ID}
		if err := s.handler.Handle(req); err != nil {
			rep.Error = err.Error()
		}
		select {
		case p.out <- envelope{Reply: &rep}:
		case <-p.done:
		}
	}
}

func (s *Server) detach(p *peer) {
	s.mu.Lock()
	if s.peer == p {
		s.peer = nil
	}
	s.mu.Unlock()
	close(p.done)
	p.conn.Close()
}

func mac(token, nonce []byte) []byte {
	h := hmac.New(sha256.New, token)
	h.Write(nonce)
	return h.Sum(nil)
}

// errClosed is returned by client calls after the connection ended.
var errClosed = errors.New("control: connection closed")

// ErrAuth is returned by Dial when the server rejects the token.
var ErrAuth = errors.New("control: authentication failed")

// ReadyInfo is what the server tells an authenticated rig about itself.
func (s *Server) ReadyInfo() Ready { return s.ready }
