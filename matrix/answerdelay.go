package matrix

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// AnswerDelaySyntax describes what ParseAnswerDelay reads.
const AnswerDelaySyntax = "DURATION (every case run the same) or MIN-MAX (each case run draws one from its seed), such as 20ms or 0-40ms"

// maxAnswerDelay bounds the delay: beyond it a tool's deadlines, not the
// server's scheduling, are what is tested.
const maxAnswerDelay = 10 * time.Second

// AnswerDelay is a seeded delay before the server answers each channel
// request of a case run (sshrig run --answer-delay, the matrix field
// answer_delay:). Each case run draws one value in [Min, Max] from its own
// seed and records it (Draw.AnswerDelayMS), so a replay waits the same.
type AnswerDelay struct {
	Min, Max time.Duration
}

// ParseAnswerDelay reads "20ms" or "0-40ms" (AnswerDelaySyntax).
func ParseAnswerDelay(s string) (AnswerDelay, error) {
	lo, hi, ranged := strings.Cut(strings.TrimSpace(s), "-")
	if !ranged {
		hi = lo
	}
	min, err1 := time.ParseDuration(lo)
	max, err2 := time.ParseDuration(hi)
	switch {
	case err1 != nil || err2 != nil:
		return AnswerDelay{}, fmt.Errorf("%q: want %s", s, AnswerDelaySyntax)
	case min < 0 || max < min:
		return AnswerDelay{}, fmt.Errorf("%q: want 0 <= MIN <= MAX", s)
	case max > maxAnswerDelay:
		return AnswerDelay{}, fmt.Errorf("%q: at most %s", s, maxAnswerDelay)
	}
	return AnswerDelay{Min: min, Max: max}, nil
}

func (d AnswerDelay) String() string {
	if d.Min == d.Max {
		return d.Min.String()
	}
	return d.Min.String() + "-" + d.Max.String()
}

// streamAnswerDelay is the case run seed's stream for the answer delay: a
// draw of its own, so the tool's and the link's draws are unchanged by it.
const streamAnswerDelay = 3

// At is the delay of the case run with this seed, in whole microseconds.
func (d AnswerDelay) At(seed uint64) time.Duration {
	span := (d.Max - d.Min) / time.Microsecond
	if span <= 0 {
		return d.Min
	}
	r := rand.New(rand.NewPCG(seed, streamAnswerDelay))
	return d.Min + time.Duration(r.Int64N(int64(span)+1))*time.Microsecond
}
