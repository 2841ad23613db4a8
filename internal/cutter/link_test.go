package cutter

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/sshrig/sshrig/fault"
)

var slowLink = Link{
	Latency:   &Latency{Delay: 5 * time.Millisecond, Jitter: 2 * time.Millisecond},
	Bandwidth: &Bandwidth{BytesPerSecond: 1 << 20},
	Slicer:    &Slicer{Size: 64, Variation: 32},
	Seed:      42,
}

// The faults delay and split, never drop, add or reorder a byte.
func TestLinkKeepsBytes(t *testing.T) {
	r := newRig(t, WithLink(slowLink))
	client, server := r.dial()
	up, down := pattern(20000, 1), pattern(20000, 2)
	errs := make(chan error, 2)
	go func() { _, err := client.Write(up); errs <- err }()
	go func() { _, err := server.Write(down); errs <- err }()
	if got := readN(t, server, len(up)); !bytes.Equal(got, up) {
		t.Error("client->server bytes changed")
	}
	if got := readN(t, client, len(down)); !bytes.Equal(got, down) {
		t.Error("server->client bytes changed")
	}
	for range 2 {
		if err := await(t, errs, "the writes"); err != nil {
			t.Fatal(err)
		}
	}
}

// Every drawn value stays in its range, and one seed draws the same.
func TestShaperDraws(t *testing.T) {
	l := Link{Latency: &Latency{Delay: 50 * time.Millisecond, Jitter: 20 * time.Millisecond}, Slicer: &Slicer{Size: 64, Variation: 32}, Seed: 7}
	draw := func() (sizes []int, waits []time.Duration) {
		s := newShaper(l, 1, toClient)
		for i := 0; i < 1000; i++ {
			n, w := s.plan(1<<15, true, time.Time{})
			sizes, waits = append(sizes, n), append(waits, w)
		}
		return sizes, waits
	}
	sizes, waits := draw()
	lo, hi := waits[0], waits[0]
	for i := range sizes {
		if sizes[i] < 32 || sizes[i] > 96 {
			t.Fatalf("slice of %d bytes, want 64±32", sizes[i])
		}
		if waits[i] < 30*time.Millisecond || waits[i] > 70*time.Millisecond {
			t.Fatalf("latency %v, want 50ms±20ms", waits[i])
		}
		lo, hi = min(lo, waits[i]), max(hi, waits[i])
	}
	if hi-lo < 30*time.Millisecond {
		t.Errorf("latencies span only %v..%v: the jitter is not drawn", lo, hi)
	}
	sizes2, waits2 := draw()
	for i := range sizes {
		if sizes[i] != sizes2[i] || waits[i] != waits2[i] {
			t.Fatalf("seed %d drew differently at %d", l.Seed, i)
		}
	}
	if _, w := newShaper(l, 1, toClient).plan(100, false, time.Time{}); w != 0 {
		t.Errorf("latency %v on a chunk's later write: it applies once per chunk", w)
	}
}

// Latency holds each chunk back at least Delay-Jitter.
func TestLinkLatency(t *testing.T) {
	const lo = 30 * time.Millisecond
	r := newRig(t, WithLink(Link{Latency: &Latency{Delay: 50 * time.Millisecond, Jitter: 20 * time.Millisecond}, Seed: 1}))
	client, server := r.dial()
	for i := 0; i < 3; i++ {
		start := time.Now()
		if _, err := server.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		readN(t, client, 1)
		if d := time.Since(start); d < lo {
			t.Fatalf("byte %d arrived after %v, before the least latency %v", i, d, lo)
		}
	}
}

// The bandwidth limit holds: n bytes take at least (n - one write) / rate.
func TestLinkBandwidth(t *testing.T) {
	const rate, n = 64 << 10, 16 << 10
	r := newRig(t, WithLink(Link{Bandwidth: &Bandwidth{BytesPerSecond: rate}}))
	client, server := r.dial()
	start := time.Now()
	go server.Write(pattern(n, 3))
	readN(t, client, n)
	least := time.Duration(n-rate/20) * time.Second / rate
	if d := time.Since(start); d < least {
		t.Fatalf("%d bytes at %d B/s took %v, less than %v", n, rate, d, least)
	}
}

// A cut does not wait out a fault's delay: the waiting pump wakes at once,
// and Close ends every wait too.
func TestLinkCutInterruptsWait(t *testing.T) {
	r := newRig(t, WithLink(Link{Latency: &Latency{Delay: time.Hour}}))
	client, server := r.dial()
	if _, err := server.Write([]byte("held an hour")); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Write([]byte("held an hour")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	if _, err := r.cut.Cut(ctx, 1, fault.Blackhole, 0); err != nil {
		t.Fatalf("Cut: %v", err)
	}
	waitEnded(t, r.cut, 1)
	r.dial() // a second connection, waiting when Close comes
}

// With every fault on, a cut still lands exactly at its flush.
func TestLinkCutLandsAtFlush(t *testing.T) {
	for _, kind := range []fault.Cut{fault.Reset, fault.Close} {
		t.Run(kind.String(), func(t *testing.T) {
			r := newRig(t, WithLink(slowLink))
			client, server := r.dial()
			const flush = 3000
			all := pattern(2*flush, 9)
			go func() {
				for p := all; len(p) > 0; p = p[min(len(p), 700):] {
					if _, err := server.Write(p[:min(len(p), 700)]); err != nil {
						return
					}
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), safety)
			defer cancel()
			rep, err := r.cut.Cut(ctx, 1, kind, flush)
			if err != nil {
				t.Fatalf("Cut: %v", err)
			}
			if rep.Delivered != flush {
				t.Errorf("delivered %d, want exactly the flush %d", rep.Delivered, flush)
			}
			if got := readN(t, client, flush); !bytes.Equal(got, all[:flush]) {
				t.Fatal("client got different bytes before the cut")
			}
			client.SetReadDeadline(time.Now().Add(safety))
			if n, _ := io.Copy(io.Discard, client); n != 0 {
				t.Errorf("client read %d bytes past the flush", n)
			}
		})
	}
}

func TestLinkValidate(t *testing.T) {
	for _, l := range []Link{
		{Latency: &Latency{Delay: time.Millisecond, Jitter: 2 * time.Millisecond}},
		{Latency: &Latency{Delay: -time.Millisecond}},
		{Bandwidth: &Bandwidth{}},
		{Slicer: &Slicer{Size: 0}},
		{Slicer: &Slicer{Size: 8, Variation: 8}},
	} {
		if err := l.Validate(); err == nil {
			t.Errorf("%s: no error", l)
		}
		if _, err := Listen("127.0.0.1:1", testCase, WithLink(l)); err == nil {
			t.Errorf("%s: Listen accepted it", l)
		}
	}
	if err := slowLink.Validate(); err != nil {
		t.Fatal(err)
	}
}
