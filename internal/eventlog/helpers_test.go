package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var testBase = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// testEntry is entry i of the deterministic logs the tests tamper with.
func testEntry(i int) Entry {
	sources := []string{SourceRig, SourceServer, SourceTool}
	return Entry{
		Time:          testBase.Add(time.Duration(i) * time.Millisecond),
		Source:        sources[i%3],
		Event:         "step",
		Case:          "case_a",
		CorrelationID: "corr-1",
		Data:          map[string]any{"i": i, "msg": "hello"},
	}
}

// writeLog writes n entries with Create, as the rig does, and returns the
// file's bytes and heads: "seq:hash" and the bare hash.
func writeLog(t testing.TB, n int) (raw []byte, seqHead, hashHead string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if _, err := w.Append(testEntry(i)); err != nil {
			t.Fatal(err)
		}
	}
	seq, h := w.Head()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw, FormatHead(seq, h), h
}

// splitLines splits a log into its lines without newlines (a copy each, so
// tampering one never touches another).
func splitLines(raw []byte) [][]byte {
	raw = bytes.TrimSuffix(raw, []byte("\n"))
	if len(raw) == 0 {
		return nil
	}
	var out [][]byte
	for _, l := range bytes.Split(raw, []byte("\n")) {
		out = append(out, bytes.Clone(l))
	}
	return out
}

func joinLines(lines [][]byte) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func lineHash(l []byte) [32]byte { return sha256.Sum256(l) }

func lineHashHex(l []byte) string {
	h := lineHash(l)
	return hex.EncodeToString(h[:])
}

// forge builds a well-formed line with the given seq and prev, as an
// attacker who knows the format would.
func forge(seq int64, prev [32]byte, msg string) []byte {
	data := []byte(`{"msg":"` + msg + `"}`)
	return appendLine(nil, seq, &prev, testBase, SourceRig, "forged", nil, nil, data)
}
