package cutter

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/sshrig/sshrig/fault"
)

// BenchmarkCutLatency measures, per cut kind, the time from calling Cut with
// its flush already satisfied until the client's Read reports the cut
// (ECONNRESET for reset, EOF for close). ns/op covers only that span; the
// connection set-up is excluded. p50-ns and p99-ns are its median and 99th
// percentile.
func BenchmarkCutLatency(b *testing.B) {
	for _, kind := range []fault.Cut{fault.Reset, fault.Close} {
		b.Run(kind.String(), func(b *testing.B) {
			r := newRig(b)
			ctx := context.Background()
			payload := pattern(512, 0)
			buf := make([]byte, 64)
			samples := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				client, server := r.dial()
				if _, err := server.Write(payload); err != nil {
					b.Fatal(err)
				}
				readN(b, client, len(payload)) // the flush is satisfied
				b.StartTimer()

				start := time.Now()
				if _, err := r.cut.Cut(ctx, server.pre.Conn, kind, int64(len(payload))); err != nil {
					b.Fatal(err)
				}
				_, err := client.Read(buf)
				lat := time.Since(start)

				b.StopTimer()
				switch {
				case kind == fault.Reset && !errors.Is(err, syscall.ECONNRESET),
					kind == fault.Close && err != io.EOF:
					b.Fatalf("client read after %v: %v", kind, err)
				}
				samples = append(samples, lat)
				client.Close()
				server.Close()
				b.StartTimer()
			}
			b.StopTimer()
			slices.Sort(samples)
			b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(samples[(len(samples)*99)/100].Nanoseconds()), "p99-ns")
		})
	}
}

// BenchmarkForward measures the cutter's throughput in each direction with
// 32 KiB writes and a reader that discards; "direct" is the same over a plain
// loopback TCP connection, for comparison.
func BenchmarkForward(b *testing.B) {
	for _, name := range []string{toServer.String(), toClient.String(), "direct"} {
		b.Run(name, func(b *testing.B) {
			var src, dst net.Conn
			switch name {
			case "direct":
				src, dst = directPair(b)
			default:
				r := newRig(b)
				client, server := r.dial()
				src, dst = client, server
				if name == toClient.String() {
					src, dst = server, client
				}
			}
			chunk := make([]byte, 32<<10)
			done := make(chan error, 1)
			go func() {
				_, err := io.CopyN(io.Discard, dst, int64(b.N)*int64(len(chunk)))
				done <- err
			}()
			b.SetBytes(int64(len(chunk)))
			b.ResetTimer()
			for range b.N {
				if _, err := src.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
			if err := await(b, done, "the reader"); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// directPair returns both ends of a plain loopback TCP connection.
func directPair(b *testing.B) (net.Conn, net.Conn) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		c.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}
