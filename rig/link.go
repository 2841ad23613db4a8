package rig

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sshrig/sshrig/internal/cutter"
)

// LinkSyntax describes what ParseLink reads, for flag help and errors.
const LinkSyntax = "comma-separated latency=DURATION, jitter=DURATION, bandwidth=SIZE/s, slice=BYTES, slice-jitter=BYTES, slice-delay=DURATION (SIZE as 65536, 64KiB or 1MiB)"

// ParseLink reads slow-link faults as sshrig run --link and the matrix
// field link: give them, e.g. "latency=50ms,jitter=20ms,bandwidth=64KiB/s".
// The seed is left 0: each case run's seed is drawn.
func ParseLink(s string) (cutter.Link, error) {
	var l cutter.Link
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
				l.Latency = &cutter.Latency{}
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
			l.Bandwidth = &cutter.Bandwidth{BytesPerSecond: n}
		case "slice", "slice-jitter":
			if l.Slicer == nil {
				l.Slicer = &cutter.Slicer{}
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
				l.Slicer = &cutter.Slicer{}
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
		return l, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "cutter: "))
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

// caseLink is the slow-link faults of case c's run: the case's own, or the
// run's, drawn from the case run's seed; nil for none.
func caseLink(c Case, run *cutter.Link, seed uint64) *cutter.Link {
	l := run
	if c.Link != nil {
		l = c.Link
	}
	if l == nil || !l.On() {
		return nil
	}
	d := *l
	d.Seed = seed
	return &d
}
