package capbuf

import (
	"bytes"
	"testing"
)

func TestKeepsFirstBytesCountsAll(t *testing.T) {
	b := New(5)
	for _, s := range []string{"abc", "defgh", "ij"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := string(b.Bytes()); got != "abcde" {
		t.Errorf("kept %q, want abcde", got)
	}
	if b.Total() != 10 {
		t.Errorf("Total %d, want 10", b.Total())
	}
	b.Bytes()[0] = 'X'
	if !bytes.Equal(b.Bytes(), []byte("abcde")) {
		t.Error("Bytes is not a copy")
	}
}

func TestWatch(t *testing.T) {
	b := New(64)
	seen := make(chan struct{})
	b.Watch([]byte("ready\n"), seen)
	b.Write([]byte("start\nrea"))
	select {
	case <-seen:
		t.Fatal("seen before the line was complete")
	default:
	}
	b.Write([]byte("dy\nmore"))
	select {
	case <-seen:
	default:
		t.Fatal("not seen after the line was written")
	}
	// Watching for what is already there closes at once.
	again := make(chan struct{})
	b.Watch([]byte("start"), again)
	<-again
}
