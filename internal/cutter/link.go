package cutter

import (
	"math/rand/v2"
	"time"

	"github.com/sshrig/sshrig/matrix"
)

// Slow-link faults shape how a pump writes, the faults toxiproxy users rely
// on: added latency with jitter, a bandwidth limit, and data sliced into
// small writes. Each is one small type; a Link composes them, and every
// connection direction gets its own shaper, drawing from the Link's seed:
//
//	  source --read chunk--> [ Latency ] --> [ Slicer ] --> [ Bandwidth ] --write--> destination
//	                         once per chunk   per write      paces the writes
//
// They only delay and split writes, never reorder, drop or add a byte, and
// every wait ends at once when the connection is cut or closed, so a cut
// still lands at its exact byte: the flush rule counts bytes delivered, not
// time.

// The slow-link faults are package matrix's types (a case or run carries
// them); the cutter shapes a connection by them.
type (
	Link      = matrix.Link
	Latency   = matrix.Latency
	Bandwidth = matrix.Bandwidth
	Slicer    = matrix.Slicer
)

// WithLink applies slow-link faults to every connection.
func WithLink(l Link) Option {
	return func(o *options) { o.link = l }
}

// shaper applies a Link to one direction of one connection.
type shaper struct {
	link Link
	rng  *rand.Rand
	next time.Time // Bandwidth: when the next byte may be written
}

func newShaper(l Link, conn int, d dir) *shaper {
	if !l.On() {
		return nil
	}
	return &shaper{link: l, rng: rand.New(rand.NewPCG(l.Seed, uint64(conn)<<1|uint64(d)))}
}

// plan says how many of the n bytes left of a chunk to write next, and how
// long to wait before; first is set for a chunk's first write.
func (s *shaper) plan(n int, first bool, now time.Time) (int, time.Duration) {
	var wait time.Duration
	if x := s.link.Latency; x != nil && first {
		wait = x.Delay
		if x.Jitter > 0 {
			wait += time.Duration(s.rng.Int64N(int64(2*x.Jitter)+1)) - x.Jitter
		}
	}
	if x := s.link.Slicer; x != nil {
		size := x.Size
		if x.Variation > 0 {
			size += s.rng.IntN(2*x.Variation+1) - x.Variation
		}
		n = min(n, max(1, size))
		if !first {
			wait += x.Delay
		}
	}
	if x := s.link.Bandwidth; x != nil {
		n = min(n, int(max(1, x.BytesPerSecond/20)))
		if ready := now.Add(wait); s.next.After(ready) {
			wait += s.next.Sub(ready)
		}
	}
	return n, wait
}

// wrote records that m bytes were written at now.
func (s *shaper) wrote(m int, now time.Time) {
	if x := s.link.Bandwidth; x != nil && m > 0 {
		s.next = later(s.next, now).Add(time.Duration(int64(m) * int64(time.Second) / x.BytesPerSecond))
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
