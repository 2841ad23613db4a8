package operations

import (
	"errors"
	"testing"
)

func TestCheck(t *testing.T) {
	if id, err := Check(CreateRecord, []byte(Answer("c-1")+"\n")); err != nil || id != "rec-c-1" {
		t.Fatalf("valid answer: %q, %v", id, err)
	}
	for _, f := range Fixtures() {
		_, err := Check(CreateRecord, []byte(f.Body("c-1")+"\n"))
		if !errors.Is(err, ErrContract) {
			t.Errorf("%s: %v, want a contract error", f, err)
		}
	}
	if _, err := Check("run_workload", []byte("anything")); err != nil {
		t.Errorf("an operation without a contract rejected its answer: %v", err)
	}
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte(Answer("x")))
	for _, fx := range Fixtures() {
		f.Add([]byte(fx.Body("x")))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := Check(CreateRecord, b)
		if err == nil && id == "" {
			t.Fatalf("accepted %q without an id", b)
		}
	})
}
