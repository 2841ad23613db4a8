package engine

import (
	"strings"
	"testing"
)

func TestLinesOf(t *testing.T) {
	in := "c-1 start 1 2\nc-10 start 1 2\nc-1 complete 0 1 2\n" + strings.Repeat("x", 100<<10) + " c-1 \nc-2 start\nc-1 start 3 4"
	got, err := linesOf(strings.NewReader(in), "c-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := "c-1 start 1 2\nc-1 complete 0 1 2\nc-1 start 3 4\n"; string(got) != want {
		t.Fatalf("linesOf = %q, want %q", got, want)
	}
	if got, _ := linesOf(strings.NewReader(""), "c-1"); got == nil || len(got) != 0 {
		t.Fatalf("an empty ledger read is %v, want empty and not nil", got)
	}
}
