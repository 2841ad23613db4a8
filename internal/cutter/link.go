package cutter

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
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

// Latency delays each chunk a pump reads by Delay plus a uniform draw in
// [-Jitter, +Jitter] (never below zero), before its first byte is written.
type Latency struct {
	Delay  time.Duration `json:"delay"`
	Jitter time.Duration `json:"jitter,omitempty"`
}

// Bandwidth limits each direction to BytesPerSecond, in writes of at most
// a twentieth of a second's worth, so the rate holds over short spans too.
type Bandwidth struct {
	BytesPerSecond int64 `json:"bytes_per_second"`
}

// Slicer splits each chunk into writes of Size bytes plus a uniform draw in
// [-Variation, +Variation] (at least one byte), with Delay between them:
// the peer sees SSH packets arrive in pieces.
type Slicer struct {
	Size      int           `json:"size"`
	Variation int           `json:"variation,omitempty"`
	Delay     time.Duration `json:"delay,omitempty"`
}

// Link is the slow-link faults of a connection, applied to both directions;
// a nil field is no such fault. Seed draws every random value (jitter,
// slice sizes).
type Link struct {
	Latency   *Latency   `json:"latency,omitempty"`
	Bandwidth *Bandwidth `json:"bandwidth,omitempty"`
	Slicer    *Slicer    `json:"slicer,omitempty"`
	Seed      uint64     `json:"seed,string"`
}

// On reports whether the link has any fault.
func (l Link) On() bool { return l.Latency != nil || l.Bandwidth != nil || l.Slicer != nil }

// Validate checks the values.
func (l Link) Validate() error {
	switch {
	case l.Latency != nil && (l.Latency.Delay < 0 || l.Latency.Jitter < 0):
		return fmt.Errorf("cutter: latency %v and jitter %v must not be negative", l.Latency.Delay, l.Latency.Jitter)
	case l.Latency != nil && l.Latency.Jitter > l.Latency.Delay:
		return fmt.Errorf("cutter: jitter %v is more than the latency %v", l.Latency.Jitter, l.Latency.Delay)
	case l.Bandwidth != nil && l.Bandwidth.BytesPerSecond <= 0:
		return fmt.Errorf("cutter: bandwidth %d B/s must be positive", l.Bandwidth.BytesPerSecond)
	case l.Slicer != nil && (l.Slicer.Size < 1 || l.Slicer.Variation < 0 || l.Slicer.Variation >= l.Slicer.Size || l.Slicer.Delay < 0):
		return fmt.Errorf("cutter: slices of %d±%d bytes (delay %v): the size must be at least 1 and above the variation", l.Slicer.Size, l.Slicer.Variation, l.Slicer.Delay)
	}
	return nil
}

// String describes the link, "latency 50ms±20ms, 64KiB/s, slices 64±32B".
func (l Link) String() string {
	var parts []string
	if x := l.Latency; x != nil {
		parts = append(parts, fmt.Sprintf("latency %v±%v", x.Delay, x.Jitter))
	}
	if x := l.Bandwidth; x != nil {
		parts = append(parts, fmt.Sprintf("%.0fKiB/s", float64(x.BytesPerSecond)/1024))
	}
	if x := l.Slicer; x != nil {
		s := fmt.Sprintf("slices %d±%dB", x.Size, x.Variation)
		if x.Delay > 0 {
			s += fmt.Sprintf(" every %v", x.Delay)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no link faults"
	}
	return strings.Join(parts, ", ")
}

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
