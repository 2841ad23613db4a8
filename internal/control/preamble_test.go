package control

import (
	"bufio"
	"errors"
	"strings"
	"testing"
)

func TestPreambleRoundTrip(t *testing.T) {
	for _, p := range []Preamble{
		{Case: "case-1", Conn: 1},
		{Case: "case-1", Conn: 1001, From: "127.0.0.1:40022"},
		{Case: "c", Conn: 7, From: "[::1]:9"},
	} {
		var b strings.Builder
		if err := WritePreamble(&b, p); err != nil {
			t.Fatalf("write %+v: %v", p, err)
		}
		got, err := ReadPreamble(bufio.NewReader(strings.NewReader(b.String() + "SSH-2.0-x\r\n")))
		if err != nil || got != p {
			t.Errorf("read %q = %+v, %v; want %+v", b.String(), got, err, p)
		}
	}
}

func TestPreambleRejects(t *testing.T) {
	for _, line := range []string{
		"SSHRIG/1 case 1 not-an-address\n",
		"SSHRIG/1 case 1 127.0.0.1:1 extra\n",
		"SSHRIG/1 case 0\n",
		"SSHRIG/2 case 1\n",
		"SSHRIG/1 case\n",
	} {
		if _, err := ReadPreamble(bufio.NewReader(strings.NewReader(line))); !errors.Is(err, ErrBadPreamble) {
			t.Errorf("ReadPreamble(%q) = %v, want ErrBadPreamble", line, err)
		}
	}
	if err := WritePreamble(&strings.Builder{}, Preamble{Case: "c", Conn: 1, From: "somewhere"}); err == nil {
		t.Error("WritePreamble accepted a From that is no address")
	}
}

// FuzzReadPreamble: whatever a stray client sends, ReadPreamble either
// rejects it or returns a preamble that writes back as the line it read.
func FuzzReadPreamble(f *testing.F) {
	f.Add("SSHRIG/1 case-1 3\n")
	f.Add("SSHRIG/1 case-1 1001 127.0.0.1:5\n")
	f.Add("SSHRIG/1 a 1 [::1]:22\nrest")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ReadPreamble(bufio.NewReader(strings.NewReader(in)))
		if err != nil {
			return
		}
		var b strings.Builder
		if err := WritePreamble(&b, p); err != nil {
			t.Fatalf("read %+v from %q, which does not write back: %v", p, in, err)
		}
		again, err := ReadPreamble(bufio.NewReader(strings.NewReader(b.String())))
		if err != nil || again != p {
			t.Fatalf("%+v wrote %q, read back as %+v, %v", p, b.String(), again, err)
		}
	})
}
