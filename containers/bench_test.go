package containers

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// BenchmarkColdImageBuild removes the server image, then prepares it again:
// the cold build a first run pays.
//
//	go test -run '^$' -bench ColdImageBuild -benchtime 3x ./containers
func BenchmarkColdImageBuild(b *testing.B) {
	needDocker(b)
	ctx := context.Background()
	cli := testClient(b)
	var times []time.Duration
	for b.Loop() {
		l := newLauncher(b)
		l.Progress = nil
		bc, err := l.context(ctx, cli, staticBin, mustBusybox(b))
		if err != nil {
			b.Fatal(err)
		}
		cli.ImageRemove(ctx, ImageRepo+":"+bc.hash(bc.tar()), client.ImageRemoveOptions{Force: true, PruneChildren: true})
		img, err := l.Prepare(ctx)
		if err != nil || !img.Built {
			b.Fatalf("%v %+v", err, img)
		}
		times = append(times, img.BuildTime)
	}
	reportDurations(b, times, "build")
}

// BenchmarkStartToReady starts a server container from the cached image
// and waits for it to be ready (the ready line, ports, a first out-of-band
// ledger read), then stops it.
//
//	go test -run '^$' -bench StartToReady -benchtime 10x ./containers
func BenchmarkStartToReady(b *testing.B) {
	needDocker(b)
	ctx := context.Background()
	l := newLauncher(b)
	l.Progress = nil
	if _, err := l.Prepare(ctx); err != nil {
		b.Fatal(err)
	}
	token := []byte("0123456789abcdef0123456789abcdef")
	var ready, stop []time.Duration
	for b.Loop() {
		start := time.Now()
		ep, err := l.Launch(ctx, token)
		if err != nil {
			b.Fatal(err)
		}
		ready = append(ready, time.Since(start))
		start = time.Now()
		if err := ep.Stop(); err != nil {
			b.Fatal(err)
		}
		stop = append(stop, time.Since(start))
	}
	reportDurations(b, ready, "ready")
	reportDurations(b, stop, "stop")
}

// reportDurations reports the median and the largest of ds, in seconds.
func reportDurations(b *testing.B, ds []time.Duration, what string) {
	if len(ds) == 0 {
		return
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	b.ReportMetric(s[len(s)/2].Seconds(), "s/"+what+"-median")
	b.ReportMetric(s[len(s)-1].Seconds(), "s/"+what+"-max")
	b.Logf("%s over %d: median %.3fs, min %.3fs, max %.3fs", what, len(s), s[len(s)/2].Seconds(), s[0].Seconds(), s[len(s)-1].Seconds())
}
