package rig

import (
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/stats"
)

// Repeat makes a run run each case many times (sshrig run --repeat, --for),
// because scheduling changes outcomes: a wrong verdict that shows once in
// 300 runs is found only by counting. The zero value runs each case once, in
// matrix order, with nothing drawn.
//
// Every random choice of a repeated run comes from Seed, so a run can be
// repeated exactly: the order of each round, the parallelism (when
// DrawParallel is set) and each case run's own seed (Draw.Seed), from which
// the tool (the flaky mutant) and any perturbation draw theirs.
type Repeat struct {
	// Times is how many rounds to run; each round runs every case once, in
	// an order drawn afresh. 0 with For set means as many as For allows.
	Times int
	// For stops the run from starting case runs once it has lasted this
	// long; case runs in flight finish.
	For time.Duration
	// Seed draws everything drawn in the run.
	Seed uint64
	// DrawParallel, when above 0, makes the parallelism a draw from
	// [1, DrawParallel] instead of Options.Parallel.
	DrawParallel int
	// Link, when set, puts slow-link faults on every case run's cutter
	// that has none of its own (Case.Link), drawn from its seed.
	Link *matrix.Link
	// AnswerDelay, when set, delays the server's answers in every case run
	// that has no range of its own (Case.AnswerDelay), drawn from its seed.
	AnswerDelay *matrix.AnswerDelay
	// MaxFailureRate is recorded in the report: the caller fails the run
	// only above it (sshrig run --max-failure-rate), and sshrig merge of
	// the run's shards does the same.
	MaxFailureRate float64
}

// On reports whether the run repeats (and so draws) at all.
func (p Repeat) On() bool { return p.Times > 0 || p.For > 0 }

// transcriptName is case c's run's transcript file name, without ".json".
func transcriptName(c matrix.Case) string {
	if c.Draw == nil {
		return safeName(c.ID)
	}
	return safeName(c.ID) + ".r" + strconv.Itoa(c.Draw.Round)
}

// caseSeed derives a case run's seed from the run's, the case id and the
// round: stable whatever else the matrix holds, so a case keeps its draws
// when other cases are selected or sharded away.
func caseSeed(seed uint64, id string, round int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return splitmix(seed ^ splitmix(h.Sum64()^uint64(round)*0x9e3779b97f4a7c15))
}

// splitmix is SplitMix64's finaliser: a bijective mix of 64 bits.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Streams of the run seed, one per kind of draw, so that adding a draw of
// one kind never shifts another.
const (
	streamOrder    = 1
	streamParallel = 2
)

// schedule hands out the run's case runs in order.
type schedule struct {
	cases    []matrix.Case
	rep      Repeat
	parallel int
	started  time.Time
	round    int   // current round, from 1
	order    []int // the current round's permutation of cases
	pos      int
	// progress state, for repeated runs
	lastProgress time.Time
	fails        int
}

func newSchedule(o Options, started time.Time) *schedule {
	s := &schedule{cases: o.Cases, rep: o.Repeat, parallel: o.Parallel, started: started}
	if o.Repeat.DrawParallel > 0 {
		r := rand.New(rand.NewPCG(o.Repeat.Seed, streamParallel))
		s.parallel = 1 + r.IntN(o.Repeat.DrawParallel)
	}
	return s
}

// total is the number of case runs the schedule will hand out, 0 when only
// time bounds it.
func (s *schedule) total() int {
	if !s.rep.On() {
		return len(s.cases)
	}
	return s.rep.Times * len(s.cases)
}

// next is the next case run, false when the run is over.
func (s *schedule) next(now time.Time) (matrix.Case, bool) {
	if !s.rep.On() {
		if s.pos == len(s.cases) {
			return matrix.Case{}, false
		}
		s.pos++
		return s.cases[s.pos-1], true
	}
	if s.rep.For > 0 && now.Sub(s.started) >= s.rep.For {
		return matrix.Case{}, false
	}
	if s.order == nil || s.pos == len(s.order) {
		if s.rep.Times > 0 && s.round == s.rep.Times {
			return matrix.Case{}, false
		}
		s.round++
		r := rand.New(rand.NewPCG(s.rep.Seed, streamOrder<<32|uint64(s.round)))
		s.order, s.pos = r.Perm(len(s.cases)), 0
	}
	c := s.cases[s.order[s.pos]]
	s.pos++
	seed := caseSeed(s.rep.Seed, c.ID, s.round)
	c.Draw = &matrix.Draw{Round: s.round, Seed: seed, Link: caseLink(c, s.rep.Link, seed),
		AnswerDelayMS: caseAnswerDelay(c, s.rep.AnswerDelay, seed)}
	return c, true
}

// progressEvery spaces the progress lines of a repeated run.
const progressEvery = 2 * time.Second

// progress writes a repeated run's progress line: done/total, rate, failures
// so far and time left, at most every progressEvery and for the last case
// run. The caller serialises calls.
func (s *schedule) progress(w io.Writer, done int, cr report.CaseReport, now time.Time) {
	if cr.Verdict == report.Fail {
		s.fails++
	}
	total := s.total()
	if w == nil || (now.Sub(s.lastProgress) < progressEvery && done != total) {
		return
	}
	s.lastProgress = now
	elapsed := now.Sub(s.started)
	perSec := float64(done) / max(elapsed.Seconds(), 1e-3)
	left := "?"
	switch {
	case total > 0 && perSec > 0:
		left = time.Duration(float64(total-done) / perSec * float64(time.Second)).Round(time.Second).String()
	case s.rep.For > 0:
		left = max(0, s.rep.For-elapsed).Round(time.Second).String()
	}
	of := "?"
	if total > 0 {
		of = strconv.Itoa(total)
	}
	fmt.Fprintf(w, "[%d/%s] %.1f case runs/s, %d failed (%s), %s left\n", done, of, perSec, s.fails,
		stats.Percent(float64(s.fails)/float64(done)), left)
}
