package eventlog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFile gives back what was appended, numbers as json.Number, and
// names the file and line of a line that does not parse.
func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []Entry
	for _, e := range []Entry{
		{Source: SourceRig, Event: "request_built", Case: "none.exit0", CorrelationID: "c-1", Data: map[string]any{"n": 12345678901234567}},
		{Source: SourceServer, Event: "exec"},
	} {
		got, err := w.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var got []Entry
	if err := ReadFile(path, func(n int, e Entry) error {
		if n != len(got)+1 {
			t.Errorf("line %d, want %d", n, len(got)+1)
		}
		got = append(got, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Seq != want[0].Seq || got[1].Prev != want[1].Prev || got[0].CorrelationID != "c-1" ||
		got[0].Data["n"] != json.Number("12345678901234567") || got[1].Source != SourceServer {
		t.Errorf("read %+v, appended %+v", got, want)
	}

	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(b, "not a line\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	err = ReadFile(path, func(int, Entry) error { return nil })
	if err == nil || !strings.Contains(err.Error(), path+":3:") {
		t.Errorf("bad line 3: %v", err)
	}
}
