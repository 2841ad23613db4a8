package eventlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConcurrentAppend: 8 goroutines append 1,000 entries in all; the log
// verifies, its seqs are 1..1000 in file order, and every entry is there
// exactly once.
func TestConcurrentAppend(t *testing.T) {
	const goroutines, perG = 8, 125
	path := filepath.Join(t.TempDir(), FileName)
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				_, err := w.Append(Entry{
					Source: []string{SourceRig, SourceServer, SourceTool}[g%3],
					Event:  "concurrent",
					Data:   map[string]any{"g": g, "i": i},
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	seq, head := w.Head()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if seq != goroutines*perG {
		t.Fatalf("head seq %d", seq)
	}
	res, err := VerifyFile(path, FormatHead(seq, head))
	if err != nil || res.Problem != nil || res.Lines != goroutines*perG || res.Head != head {
		t.Fatalf("verify: %+v %v", res, err)
	}

	raw, _ := os.ReadFile(path)
	seen := map[string]bool{}
	var lastTime time.Time
	for n, l := range splitLines(raw) {
		var e struct {
			Seq  int64     `json:"seq"`
			Time time.Time `json:"time"`
			Data struct{ G, I int }
		}
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		if e.Seq != int64(n+1) {
			t.Fatalf("line %d has seq %d", n+1, e.Seq)
		}
		if e.Time.Before(lastTime) {
			t.Fatalf("line %d: time goes backwards", n+1)
		}
		lastTime = e.Time
		k := fmt.Sprint(e.Data.G, "/", e.Data.I)
		if seen[k] {
			t.Fatalf("entry %s twice", k)
		}
		seen[k] = true
	}
	if len(seen) != goroutines*perG {
		t.Fatalf("%d distinct entries", len(seen))
	}
}

func TestAppendReturnsWhatWasWritten(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if seq, h := w.Head(); seq != 0 || h != Genesis {
		t.Fatalf("empty head %d %s", seq, h)
	}
	loc := time.FixedZone("x", 3600)
	in := Entry{Time: time.Date(2025, 6, 1, 12, 0, 0, 5, loc), Source: SourceTool, Event: "result",
		Case: "c\"1", CorrelationID: "id-<1>", Data: map[string]any{"b": 1, "a": "x\ny"}}
	e1, err := w.Append(in)
	if err != nil {
		t.Fatal(err)
	}
	if e1.Seq != 1 || e1.Prev != Genesis || !e1.Time.Equal(in.Time) || e1.Time.Location() != time.UTC {
		t.Fatalf("first entry %+v", e1)
	}
	want := `{"seq":1,"prev":"` + Genesis + `","time":"2025-06-01T11:00:00.000000005Z","source":"tool","event":"result",` +
		`"case":"c\"1","correlation_id":"id-\u003c1\u003e","data":{"a":"x\ny","b":1}}` + "\n"
	if buf.String() != want {
		t.Fatalf("line\n got %s\nwant %s", buf.String(), want)
	}
	_, h1 := w.Head()
	if h1 != lineHashHex([]byte(strings.TrimSuffix(want, "\n"))) {
		t.Fatal("head is not the hash of the line")
	}

	before := time.Now()
	e2, err := w.Append(Entry{Source: SourceRig, Event: "verdict"})
	if err != nil {
		t.Fatal(err)
	}
	if e2.Seq != 2 || e2.Prev != h1 || e2.Time.Before(before.Add(-time.Second)) || e2.Time.Location() != time.UTC {
		t.Fatalf("second entry %+v", e2)
	}
	line2 := strings.Split(buf.String(), "\n")[1]
	if strings.Contains(line2, `"case"`) || strings.Contains(line2, `"data"`) || strings.Contains(line2, `"correlation_id"`) {
		t.Fatalf("empty optional fields written: %s", line2)
	}
	p, err := parseLine([]byte(line2))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := p.entry()
	if !got.Time.Equal(e2.Time) || got.Seq != 2 || got.Prev != h1 {
		t.Fatalf("written %+v, returned %+v", got, e2)
	}
}

func TestAppendRejects(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	bad := []Entry{
		{Source: "client", Event: "x"},
		{Source: "", Event: "x"},
		{Source: SourceRig, Event: ""},
		{Source: SourceRig, Event: "Cut"},
		{Source: SourceRig, Event: "cut-now"},
		{Source: SourceRig, Event: "x", Data: map[string]any{"f": func() {}}},
		{Source: SourceRig, Event: "x", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Source: SourceRig, Event: "x", Data: map[string]any{"big": strings.Repeat("a", MaxLineSize)}},
	}
	for _, e := range bad {
		if _, err := w.Append(e); err == nil {
			t.Errorf("accepted %+v", e.Event)
		}
	}
	if buf.Len() != 0 {
		t.Fatalf("rejected entries wrote %q", buf.String())
	}
	if e, err := w.Append(Entry{Source: SourceRig, Event: "ok_1"}); err != nil || e.Seq != 1 {
		t.Fatalf("after rejects: %+v %v", e, err)
	}
}

func TestRedactor(t *testing.T) {
	const secret = "hunter2-private-key"
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.SetRedactor(func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(secret), []byte("[redacted]")) })
	e, err := w.Append(Entry{Source: SourceTool, Event: "result", Data: map[string]any{"stdout": "key=" + secret, "n": 12345678901234567}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Data["stdout"] != "key=[redacted]" || e.Data["n"] != json.Number("12345678901234567") || e.Seq != 1 || e.Prev != Genesis {
		t.Fatalf("returned %+v", e)
	}
	if _, err := w.Append(Entry{Source: SourceRig, Event: "plain"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), secret) {
		t.Fatal("secret written")
	}
	seq, h := w.Head()
	res, err := Verify(bytes.NewReader(buf.Bytes()), FormatHead(seq, h))
	if err != nil || res.Problem != nil {
		t.Fatalf("redacted log: %+v %v", res, err)
	}

	// A redactor that breaks the line, the chain or adds a newline is
	// refused, nothing is written and the seq is not used.
	for _, f := range []func([]byte) []byte{
		func(b []byte) []byte { return b[:len(b)-1] },
		func(b []byte) []byte { return bytes.Replace(b, []byte(`{"seq":3`), []byte(`{"seq":4`), 1) },
		func(b []byte) []byte {
			i := bytes.Index(b, []byte(`"prev":"`)) + len(`"prev":"`)
			b[i] = map[bool]byte{true: 'b', false: 'a'}[b[i] == 'a']
			return b
		},
		func(b []byte) []byte { return bytes.Replace(b, []byte(`,"event"`), []byte("\n,\"event\""), 1) },
	} {
		n := buf.Len()
		w.SetRedactor(f)
		if _, err := w.Append(Entry{Source: SourceRig, Event: "x", Data: map[string]any{"a": 1}}); err == nil {
			t.Fatal("bad redactor accepted")
		}
		if buf.Len() != n {
			t.Fatal("bad redactor wrote")
		}
	}
	w.SetRedactor(nil)
	if e, err := w.Append(Entry{Source: SourceRig, Event: "x"}); err != nil || e.Seq != 3 {
		t.Fatalf("after bad redactors: %+v %v", e, err)
	}
	res, _ = Verify(bytes.NewReader(buf.Bytes()), "")
	if res.Problem != nil || res.Lines != 3 {
		t.Fatalf("%+v", res)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestWriteErrorIsSticky(t *testing.T) {
	w := NewWriter(&failWriter{n: 1})
	if _, err := w.Append(Entry{Source: SourceRig, Event: "a"}); err != nil {
		t.Fatal(err)
	}
	_, err1 := w.Append(Entry{Source: SourceRig, Event: "b"})
	_, err2 := w.Append(Entry{Source: SourceRig, Event: "c"})
	if err1 == nil || err2 == nil || !strings.Contains(err2.Error(), "disk full") {
		t.Fatalf("errors %v, %v", err1, err2)
	}
	if seq, _ := w.Head(); seq != 1 {
		t.Fatalf("head seq %d after failed writes", seq)
	}
}

func TestCreateAndClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(path); err == nil {
		t.Fatal("Create over an existing log succeeded")
	}
	if _, err := w.Append(Entry{Source: SourceServer, Event: "connection_accepted"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := w.Append(Entry{Source: SourceRig, Event: "late"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&^0o644 != 0 {
		t.Fatalf("mode %v", fi.Mode())
	}
	seq, h := w.Head()
	res, err := VerifyFile(path, FormatHead(seq, h))
	if err != nil || res.Problem != nil || res.Lines != 1 {
		t.Fatalf("%+v %v", res, err)
	}
}
