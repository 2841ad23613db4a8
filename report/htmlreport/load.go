package htmlreport

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sshrig/sshrig/internal/eventlog"
	"github.com/sshrig/sshrig/report"
)

// Run is one run directory as the page shows it.
type Run struct {
	Name   string // the directory's name
	Report *report.Report
	// Verified says what checking the event log found: "" when it is
	// intact and matches the report's head, else the problem.
	Verified string
	events   map[string][]event // by correlation id, in log order
}

// event is the part of an event log entry the timeline draws.
type event struct {
	Time   time.Time      `json:"time"`
	Source string         `json:"source"`
	Event  string         `json:"event"`
	Data   map[string]any `json:"data"`
	Corr   string         `json:"correlation_id"`
}

// Load reads a run directory: report.json, and events.jsonl verified
// against the report's head.
func Load(dir string) (*Run, error) {
	rep, err := report.ReadReport(dir)
	if err != nil {
		return nil, err
	}
	r := &Run{Name: filepath.Base(filepath.Clean(dir)), Report: rep, events: map[string][]event{}}
	path := filepath.Join(dir, eventlog.FileName)
	res, err := eventlog.VerifyFile(path, rep.LogHead)
	switch {
	case err != nil:
		r.Verified = err.Error()
	case res.Problem != nil:
		r.Verified = res.Problem.Error()
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), eventlog.MaxLineSize)
	for n := 1; sc.Scan(); n++ {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		if e.Corr != "" {
			r.events[e.Corr] = append(r.events[e.Corr], e)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
