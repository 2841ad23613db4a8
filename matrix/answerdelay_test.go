package matrix

import (
	"testing"
	"time"
)

func TestParseAnswerDelay(t *testing.T) {
	for in, want := range map[string]AnswerDelay{"20ms": {20 * time.Millisecond, 20 * time.Millisecond}, "0-40ms": {0, 40 * time.Millisecond},
		"5ms-1s": {5 * time.Millisecond, time.Second}} {
		got, err := ParseAnswerDelay(in)
		if err != nil || got != want {
			t.Errorf("ParseAnswerDelay(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "40ms-20ms", "-5ms", "1m", "20"} {
		if d, err := ParseAnswerDelay(in); err == nil {
			t.Errorf("ParseAnswerDelay(%q) = %v, want an error", in, d)
		}
	}
}
