package containers_test

import (
	"context"
	"testing"
	"time"

	"github.com/sshrig/sshrig/containers"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/rig"
)

// BenchmarkMatrix runs the whole default matrix with the reference tool,
// two cases at once, on each target in turn.
//
//	go test -run '^$' -bench Matrix -benchtime 3x ./containers
func BenchmarkMatrix(b *testing.B) {
	containers.NeedDocker(b)
	l := containers.NewLauncher(b)
	l.Progress = nil
	if _, err := l.Prepare(context.Background()); err != nil {
		b.Fatal(err)
	}
	for _, target := range []rig.Target{rig.Embedded(), rig.Container(l)} {
		b.Run(target.Name(), func(b *testing.B) {
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				rep, err := rig.Run(context.Background(), rig.Options{Tool: tools.Reference{}, Cases: matrix.DefaultMatrix(), Target: target})
				if err != nil || rep.Summary.Pass != rep.Summary.Executed() {
					b.Fatalf("%v %v", err, rep.SummaryLine())
				}
				times = append(times, time.Since(start))
			}
			containers.ReportDurations(b, times, "matrix")
		})
	}
}
