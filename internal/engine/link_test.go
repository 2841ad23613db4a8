package engine

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/cutter"
)

var linkReps = flag.Int("sshrig.link-reps", 10, "repetitions per (moment, cut) pair in TestLandsEveryTimeSlowLink (the acceptance figure uses 200)")

// TestLandsEveryTimeSlowLink is TestLandsEveryTime with every slow-link
// fault on (50 ms ± 20 ms latency each way, 64 KiB/s, writes sliced to
// 64 ± 32 bytes), each run drawing from its own seed: the cut must still
// land at its moment every time, and the truth must still be right.
func TestLandsEveryTimeSlowLink(t *testing.T) {
	reps := *linkReps
	if testing.Short() {
		reps = 3
	}
	env := startEnv(t, Options{})
	link := cutter.Link{
		Latency:   &cutter.Latency{Delay: 50 * time.Millisecond, Jitter: 20 * time.Millisecond},
		Bandwidth: &cutter.Bandwidth{BytesPerSecond: 64 << 10},
		Slicer:    &cutter.Slicer{Size: 64, Variation: 32},
	}
	type pair struct {
		m   fault.Moment
		cut fault.Cut
	}
	var pairs []pair
	for _, m := range fault.Moments() {
		if m.IsStep() {
			continue // step moments need a conversation: sshrigtest and rig test them
		}
		switch m {
		case fault.None, fault.Refuse:
			continue // nothing passes the cutter to be shaped
		}
		for _, cut := range fault.TransportCuts() {
			pairs = append(pairs, pair{m, cut})
		}
	}
	// The runs wait on the link, not the processor: more at once.
	const workers = 8
	for _, p := range pairs {
		t.Run(p.m.String()+"."+p.cut.String(), func(t *testing.T) {
			var landed, settledWrong int
			var mu sync.Mutex
			var failures []string
			jobs := make(chan int)
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Go(func() {
					for i := range jobs {
						ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
						l := link
						l.Seed = uint64(i) + 1
						run, err := env.Begin(ctx, Spec{ID: env.NewID(), Moment: p.m, Cut: p.cut, Disposition: fault.Survive, OutputBytes: 8, Link: l})
						if err != nil {
							cancel()
							mu.Lock()
							failures = append(failures, "begin: "+err.Error())
							mu.Unlock()
							continue
						}
						cmd, _ := run.Wrap(workload(0))
						res := runClientUntilCut(ctx, run, cmd)
						ev, err := run.Finish(ctx, 5*time.Second)
						cancel()
						mu.Lock()
						switch {
						case err != nil:
							failures = append(failures, "finish: "+err.Error())
						case !ev.Landed:
							failures = append(failures, fmt.Sprintf("%s (the client stopped at %s: %v)", ev.NotLanded, res.stage, res.err))
						default:
							landed++
							if ev.Truth.State != ExpectTruth(p.m, p.cut, fault.Survive) || !ev.Truth.Agree() {
								settledWrong++
								failures = append(failures, "truth "+ev.Truth.String()+" "+ev.Truth.Disagreement)
							}
						}
						mu.Unlock()
					}
				})
			}
			for i := 0; i < reps; i++ {
				jobs <- i
			}
			close(jobs)
			wg.Wait()
			if landed != reps || settledWrong != 0 {
				if len(failures) > 5 {
					failures = failures[:5]
				}
				t.Fatalf("landed %d of %d, wrong truth %d; first failures: %s", landed, reps, settledWrong, strings.Join(failures, " | "))
			}
			t.Logf("landed %d of %d with %s", landed, reps, link)
		})
	}
}
