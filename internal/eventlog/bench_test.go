package eventlog

import (
	"bufio"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// typicalEntry is the size of a common line: a tool event with a case, a
// correlation id and a few data fields.
func typicalEntry(i int) Entry {
	return Entry{
		Time:          testBase.Add(time.Duration(i) * time.Microsecond),
		Source:        SourceTool,
		Event:         "process_exited",
		Case:          "cut_after_start_marker",
		CorrelationID: "c0ffee00-1234-4abc-8def-0123456789ab",
		Data:          map[string]any{"exit_code": 255, "signal": "", "duration_ms": 1234, "stdout_bytes": 512, "category": "transport_lost"},
	}
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func BenchmarkAppend(b *testing.B) {
	e := typicalEntry(1)
	b.Run("memory", func(b *testing.B) {
		var cw countingWriter
		w := NewWriter(&cw)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := w.Append(e); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cw.n)/float64(b.N), "bytes/entry")
	})
	b.Run("file", func(b *testing.B) {
		// One write(2) per line, as the rig runs it.
		w, err := Create(filepath.Join(b.TempDir(), FileName))
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := w.Append(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}

const benchLines = 1_000_000

var benchLog struct {
	once sync.Once
	dir  string
	path string
	head string
	size int64
	err  error
}

// millionLineLog writes the 1,000,000-line log once per test binary; the
// benchmark function runs several times and must not regenerate it.
func millionLineLog(b *testing.B) (path, head string, size int64) {
	benchLog.once.Do(func() {
		dir, err := os.MkdirTemp("", "eventlog-bench-")
		if err != nil {
			benchLog.err = err
			return
		}
		benchLog.dir = dir
		benchLog.path = filepath.Join(dir, FileName)
		f, err := os.Create(benchLog.path)
		if err != nil {
			benchLog.err = err
			return
		}
		bw := bufio.NewWriterSize(f, 1<<20)
		w := NewWriter(bw)
		for i := range benchLines {
			if _, err := w.Append(typicalEntry(i)); err != nil {
				benchLog.err = err
				return
			}
		}
		benchLog.head = FormatHead(w.Head())
		if err := bw.Flush(); err != nil {
			benchLog.err = err
			return
		}
		if err := f.Close(); err != nil {
			benchLog.err = err
			return
		}
		fi, err := os.Stat(benchLog.path)
		if err != nil {
			benchLog.err = err
			return
		}
		benchLog.size = fi.Size()
	})
	if benchLog.err != nil {
		b.Fatal(benchLog.err)
	}
	return benchLog.path, benchLog.head, benchLog.size
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchLog.dir != "" {
		os.RemoveAll(benchLog.dir)
	}
	os.Exit(code)
}

func BenchmarkVerify(b *testing.B) {
	path, head, size := millionLineLog(b)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := VerifyFile(path, head)
		if err != nil || res.Problem != nil || res.Lines != benchLines {
			b.Fatalf("%+v %v", res, err)
		}
	}
	b.ReportMetric(float64(benchLines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(size)/benchLines, "bytes/line")
}
