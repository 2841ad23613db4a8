package server

import "sync"

// tracker counts running handlers and lets teardown refuse new ones and wait
// for the rest. Unlike sync.WaitGroup it may be entered from goroutines it did
// not start (gliderlabs starts channel handlers itself).
type tracker struct {
	mu     sync.Mutex
	n      int
	closed bool
	zero   chan struct{} // closed when closed and n reaches 0
}

func newTracker() *tracker { return &tracker{zero: make(chan struct{})} }

// enter registers a handler; it fails once close has begun.
func (t *tracker) enter() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.n++
	return true
}

func (t *tracker) leave() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.closed && t.n == 0 {
		close(t.zero)
	}
}

// close refuses new handlers; done is closed when the last one left.
func (t *tracker) close() (done <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		if t.n == 0 {
			close(t.zero)
		}
	}
	return t.zero
}
