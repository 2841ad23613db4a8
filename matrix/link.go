package matrix

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Latency delays each chunk read by Delay plus a uniform draw in
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
		return fmt.Errorf("link: latency %v and jitter %v must not be negative", l.Latency.Delay, l.Latency.Jitter)
	case l.Latency != nil && l.Latency.Jitter > l.Latency.Delay:
		return fmt.Errorf("link: jitter %v is more than the latency %v", l.Latency.Jitter, l.Latency.Delay)
	case l.Bandwidth != nil && l.Bandwidth.BytesPerSecond <= 0:
		return fmt.Errorf("link: bandwidth %d B/s must be positive", l.Bandwidth.BytesPerSecond)
	case l.Slicer != nil && (l.Slicer.Size < 1 || l.Slicer.Variation < 0 || l.Slicer.Variation >= l.Slicer.Size || l.Slicer.Delay < 0):
		return fmt.Errorf("link: slices of %d±%d bytes (delay %v): the size must be at least 1 and above the variation", l.Slicer.Size, l.Slicer.Variation, l.Slicer.Delay)
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

// LinkSyntax describes what ParseLink reads, for flag help and errors.
const LinkSyntax = "comma-separated latency=DURATION, jitter=DURATION, bandwidth=SIZE/s, slice=BYTES, slice-jitter=BYTES, slice-delay=DURATION (SIZE as 65536, 64KiB or 1MiB)"

// ParseLink reads slow-link faults as sshrig run --link and the matrix
// field link: give them, e.g. "latency=50ms,jitter=20ms,bandwidth=64KiB/s".
// The seed is left 0: each case run's seed is drawn.
func ParseLink(s string) (Link, error) {
	var l Link
	if strings.TrimSpace(s) == "" {
		return l, fmt.Errorf("no link faults given: want %s", LinkSyntax)
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || v == "" {
			return l, fmt.Errorf("%q is not key=value: want %s", part, LinkSyntax)
		}
		if seen[k] {
			return l, fmt.Errorf("%s given twice", k)
		}
		seen[k] = true
		dur := func() (time.Duration, error) {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return 0, fmt.Errorf("%s=%s: want a Go duration such as 50ms", k, v)
			}
			return d, nil
		}
		var err error
		switch k {
		case "latency", "jitter":
			if l.Latency == nil {
				l.Latency = &Latency{}
			}
			if k == "latency" {
				l.Latency.Delay, err = dur()
			} else {
				l.Latency.Jitter, err = dur()
			}
		case "bandwidth":
			var n int64
			n, err = size(strings.TrimSuffix(v, "/s"))
			if err != nil || n <= 0 {
				err = fmt.Errorf("bandwidth=%s: want bytes per second such as 64KiB/s", v)
			}
			l.Bandwidth = &Bandwidth{BytesPerSecond: n}
		case "slice", "slice-jitter":
			if l.Slicer == nil {
				l.Slicer = &Slicer{}
			}
			var n int64
			n, err = size(v)
			if err != nil || n > 1<<20 {
				err = fmt.Errorf("%s=%s: want a number of bytes up to 1MiB", k, v)
			}
			if k == "slice" {
				l.Slicer.Size = int(n)
			} else {
				l.Slicer.Variation = int(n)
			}
		case "slice-delay":
			if l.Slicer == nil {
				l.Slicer = &Slicer{}
			}
			l.Slicer.Delay, err = dur()
		default:
			err = fmt.Errorf("unknown link fault %q: want %s", k, LinkSyntax)
		}
		if err != nil {
			return l, err
		}
	}
	switch {
	case l.Latency != nil && !seen["latency"]:
		return l, fmt.Errorf("jitter needs latency")
	case l.Slicer != nil && !seen["slice"]:
		return l, fmt.Errorf("slice-jitter and slice-delay need slice")
	}
	if err := l.Validate(); err != nil {
		return l, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "link: "))
	}
	return l, nil
}

// size reads 65536, 64KiB or 1MiB.
func size(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}
