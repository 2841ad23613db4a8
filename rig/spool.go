package rig

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sshrig/sshrig/report"
)

// caseSink receives a run's case reports as they finish, each with its
// dispatch index, and keeps them in dispatch order: in memory, or, for a
// repeated run with a run directory, in a spool file there (one JSON line
// each) that report.json is written from, so that a long run does not hold
// every case run it ran. Only reports that finished ahead of one still
// running wait in memory.
type caseSink struct {
	agg     report.Aggregator
	mem     []report.CaseReport
	spool   *os.File
	w       *bufio.Writer
	pending map[int]report.CaseReport
	next    int
	err     error
}

// spoolName is the spool's name in the run directory while the run lasts.
const spoolName = ".cases.jsonl"

func newCaseSink(o Options) (*caseSink, error) {
	s := &caseSink{pending: map[int]report.CaseReport{}}
	if !o.Repeat.On() || o.Out == nil || o.Out.temporary {
		return s, nil
	}
	f, err := os.Create(filepath.Join(o.Out.Path, spoolName))
	if err != nil {
		return nil, fmt.Errorf("rig: %w", err)
	}
	s.spool, s.w = f, bufio.NewWriterSize(f, 64<<10)
	return s, nil
}

// put takes the report of the case run dispatched i-th (from 0). It keeps
// and aggregates the reports in dispatch order, whatever order they finish
// in, so that the same seed lists the same first failing case runs.
func (s *caseSink) put(i int, cr report.CaseReport) {
	s.pending[i] = cr
	for {
		c, ok := s.pending[s.next]
		if !ok {
			return
		}
		delete(s.pending, s.next)
		s.next++
		s.agg.Add(c)
		if s.spool == nil {
			s.mem = append(s.mem, c)
			continue
		}
		b, err := json.Marshal(c)
		if err == nil {
			b = append(b, '\n')
			_, err = s.w.Write(b)
		}
		if err != nil && s.err == nil {
			s.err = fmt.Errorf("rig: %s: %w", spoolName, err)
		}
	}
}

// finish flushes the spool; the sink then holds every report put.
func (s *caseSink) finish() error {
	if s.spool == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil && s.err == nil {
		s.err = err
	}
	if _, err := s.spool.Seek(0, io.SeekStart); err != nil && s.err == nil {
		s.err = err
	}
	return s.err
}

// close removes the spool.
func (s *caseSink) close() {
	if s.spool != nil {
		s.spool.Close()
		os.Remove(s.spool.Name())
	}
}

// writeJSON writes r as Report.JSON does, with its cases taken
// from the sink: from memory, or streamed from the spool line by line.
func writeJSON(w io.Writer, r *report.Report, s *caseSink) error {
	if s == nil || s.spool == nil {
		b, err := r.JSON()
		if err == nil {
			_, err = w.Write(b)
		}
		return err
	}
	head, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	// Cases is nil here, so the one top-level "cases" is null: the cases go
	// there, indented as MarshalIndent would have them.
	const hole = "\n  \"cases\": null,"
	before, after, ok := bytes.Cut(head, []byte(hole))
	if !ok {
		return fmt.Errorf("rig: report.json: no place for the cases")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(before)
	bw.WriteString("\n  \"cases\": [")
	sc := bufio.NewScanner(s.spool)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var ind bytes.Buffer
	for n := 0; sc.Scan(); n++ {
		if n > 0 {
			bw.WriteByte(',')
		}
		ind.Reset()
		if err := json.Indent(&ind, sc.Bytes(), "    ", "  "); err != nil {
			return fmt.Errorf("rig: %s: %w", spoolName, err)
		}
		bw.WriteString("\n    ")
		bw.Write(ind.Bytes())
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("rig: %s: %w", spoolName, err)
	}
	bw.WriteString("\n  ],")
	bw.Write(after)
	bw.WriteByte('\n')
	return bw.Flush()
}
