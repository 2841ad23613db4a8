package control

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
)

// Client is the rig's end of the control protocol.
type Client struct {
	conn  net.Conn
	enc   *json.Encoder
	ready Ready

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan Reply
	subs    map[string][]*Subscription
	taps    []*Subscription // receive every event
	err     error           // why the connection ended
	done    chan struct{}
	readerW sync.WaitGroup
}

// Dial connects to a control server and authenticates with token.
func Dial(ctx context.Context, addr string, token []byte) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("control: dial %s: %w", addr, err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	dec := json.NewDecoder(bufio.NewReader(conn))
	enc := json.NewEncoder(conn)
	var h envelope
	if err := dec.Decode(&h); err != nil || h.Hello == nil {
		conn.Close()
		return nil, fmt.Errorf("control: %s did not greet: %v", addr, err)
	}
	if h.Hello.Version != ProtocolVersion {
		conn.Close()
		return nil, fmt.Errorf("control: server speaks protocol %d, rig speaks %d", h.Hello.Version, ProtocolVersion)
	}
	nonce, err := hex.DecodeString(h.Hello.Nonce)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("control: bad nonce: %v", err)
	}
	if err := enc.Encode(envelope{Auth: &authMsg{MAC: hex.EncodeToString(mac(token, nonce))}}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("control: %w", err)
	}
	var r envelope
	if err := dec.Decode(&r); err != nil {
		conn.Close()
		return nil, fmt.Errorf("control: waiting for ready: %w", err)
	}
	if r.Ready == nil {
		conn.Close()
		if r.Error == "control: authentication failed" {
			return nil, ErrAuth
		}
		return nil, fmt.Errorf("control: server refused: %s", r.Error)
	}
	c := &Client{
		conn:    conn,
		enc:     enc,
		ready:   *r.Ready,
		pending: map[uint64]chan Reply{},
		subs:    map[string][]*Subscription{},
		done:    make(chan struct{}),
	}
	c.readerW.Add(1)
	go c.read(dec)
	return c, nil
}

// Ready is what the server said about itself.
func (c *Client) Ready() Ready { return c.ready }

// Done is closed when the connection ends; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err reports why the connection ended, or nil while it is up.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Client) read(dec *json.Decoder) {
	defer c.readerW.Done()
	var err error
	for {
		var m envelope
		if err = dec.Decode(&m); err != nil {
			break
		}
		switch {
		case m.Reply != nil:
			c.mu.Lock()
			ch := c.pending[m.Reply.ID]
			delete(c.pending, m.Reply.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- *m.Reply
			}
		case m.Event != nil:
			c.mu.Lock()
			for _, s := range c.subs[m.Event.Case] {
				s.push(*m.Event)
			}
			for _, s := range c.taps {
				s.push(*m.Event)
			}
			c.mu.Unlock()
		case m.Error != "":
			err = fmt.Errorf("control: server: %s", m.Error)
		}
		if err != nil {
			break
		}
	}
	c.mu.Lock()
	if c.err == nil {
		c.err = fmt.Errorf("%w: %v", errClosed, err)
	}
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.done)
}

// Do sends a request and waits for its reply. A reply with an error becomes
// the returned error.
func (c *Client) Do(ctx context.Context, req Request) error {
	ch := make(chan Reply, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.nextID++
	req.ID = c.nextID
	c.pending[req.ID] = ch
	// Encoding under the lock keeps concurrent requests from interleaving.
	err := c.enc.Encode(envelope{Request: &req})
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("control: send %s: %w", req.Op, err)
	}
	select {
	case rep, ok := <-ch:
		if !ok {
			return c.Err()
		}
		if rep.Error != "" {
			return fmt.Errorf("control: %s: %s", req.Op, rep.Error)
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, req.ID)
		c.mu.Unlock()
		return ctx.Err()
	}
}

// Subscribe returns a subscription to the events of one case. Subscribe
// before setting the case up, so no event is missed.
func (c *Client) Subscribe(caseID string) *Subscription {
	s := newSubscription(c)
	c.mu.Lock()
	c.subs[caseID] = append(c.subs[caseID], s)
	s.unsubscribe = func() {
		list := c.subs[caseID]
		for i, x := range list {
			if x == s {
				c.subs[caseID] = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		if len(c.subs[caseID]) == 0 {
			delete(c.subs, caseID)
		}
	}
	c.mu.Unlock()
	return s
}

// Tap returns a subscription to every event of every case.
func (c *Client) Tap() *Subscription {
	s := newSubscription(c)
	c.mu.Lock()
	c.taps = append(c.taps, s)
	s.unsubscribe = func() {
		for i, x := range c.taps {
			if x == s {
				c.taps = append(c.taps[:i:i], c.taps[i+1:]...)
				break
			}
		}
	}
	c.mu.Unlock()
	return s
}

// Close ends the connection and waits for the reader.
func (c *Client) Close() error {
	err := c.conn.Close()
	c.readerW.Wait()
	return err
}

// Subscription queues events without bound, so the connection's reader never
// blocks on a slow consumer.
type Subscription struct {
	c           *Client
	mu          sync.Mutex
	queue       []Event
	pushed      uint64 // events delivered to it so far, taken or not
	notify      chan struct{}
	unsubscribe func() // called with c.mu held
	closed      chan struct{}
	closeOnce   sync.Once
}

// ErrUnsubscribed is returned by Next after Close.
var ErrUnsubscribed = errors.New("control: subscription closed")

func newSubscription(c *Client) *Subscription {
	return &Subscription{c: c, notify: make(chan struct{}, 1), closed: make(chan struct{})}
}

func (s *Subscription) push(e Event) {
	s.mu.Lock()
	s.queue = append(s.queue, e)
	s.pushed++
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Pushed is how many events have been delivered to the subscription so far,
// taken by Next or still queued. Right after a Do returns it counts every
// event of the subscription's that the server emitted before its reply (the
// server writes its events and replies in order on one connection, and the
// client delivers each event before it reads on): a reader that has taken
// that many from it has seen them all.
func (s *Subscription) Pushed() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushed
}

// Next returns the next event, waiting for one. It fails when ctx is done or
// the connection ended with nothing left queued.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			e := s.queue[0]
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return e, nil
		}
		s.mu.Unlock()
		select {
		case <-s.notify:
		case <-s.c.done:
			s.mu.Lock()
			n := len(s.queue)
			s.mu.Unlock()
			if n == 0 {
				return Event{}, s.c.Err()
			}
		case <-s.closed:
			return Event{}, ErrUnsubscribed
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// Close stops delivery to this subscription; a waiting Next returns
// ErrUnsubscribed once the events already queued are consumed.
func (s *Subscription) Close() {
	s.c.mu.Lock()
	if s.unsubscribe != nil {
		s.unsubscribe()
		s.unsubscribe = nil
	}
	s.c.mu.Unlock()
	s.closeOnce.Do(func() { close(s.closed) })
}
