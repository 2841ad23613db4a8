package capbuf

import (
	"bytes"
	"sync"
)

// Buffer keeps the first Max bytes written to it and counts them all. It is
// safe for concurrent use: a command's stdout may be written while the rig
// reads it.
type Buffer struct {
	Max int

	mu    sync.Mutex
	b     []byte
	total int64
	watch []byte
	seen  chan struct{}
}

// New returns a Buffer keeping at most max bytes.
func New(max int) *Buffer { return &Buffer{Max: max} }

// Write keeps what fits and never fails, so a writer is never stopped by
// the limit.
func (c *Buffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := c.Max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	if c.seen != nil && bytes.Contains(c.b, c.watch) {
		close(c.seen)
		c.seen = nil
	}
	return len(p), nil
}

// Watch closes seen once s has appeared in the kept bytes (at once if it
// already has).
func (c *Buffer) Watch(s []byte, seen chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bytes.Contains(c.b, s) {
		close(seen)
		return
	}
	c.watch, c.seen = s, seen
}

// Bytes is a copy of the kept bytes.
func (c *Buffer) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.b...)
}

// Total is how many bytes were written, kept or not.
func (c *Buffer) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}
