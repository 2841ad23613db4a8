package rig

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sshrig/sshrig/internal/testpeer"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/reading"
	"github.com/sshrig/sshrig/report"
)

// OpenSSH's ssh itself, unwrapped, read by the built-in ssh reading: the
// cases with no fault pass, and exit 255 with "Connection reset" stands both
// for "nothing was sent" (a reset at auth) and "the command may have run"
// (a reset once it started), so those cases fail with ambiguous_report and
// the report names the value and what it conflates. The log carries each
// amended decision.
func TestReadingUnwrappedSSH(t *testing.T) {
	testpeer.Need(t, "ssh")
	ext, err := tools.ParseExternal("exec:ssh -o BatchMode=yes -o ConnectTimeout={deadline_s} -o ServerAliveInterval=1 -o ServerAliveCountMax=2" +
		" -i {identity} -o UserKnownHostsFile={known_hosts} -p {port} {user}@{host} {command}")
	if err != nil {
		t.Fatal(err)
	}
	rd, _ := reading.Builtin("ssh")
	cases, err := matrix.Select(matrix.DefaultMatrix(), []string{"none.*", "auth.reset.survive", "started.reset.survive"})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := CreateRunDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{Tool: ext, Reading: rd, Cases: cases, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.Close(); err != nil {
		t.Fatal(err)
	}
	byID := map[string]report.CaseReport{}
	for _, c := range rep.Cases {
		byID[c.ID] = c
		if len(c.NotApplicable) == 0 {
			t.Errorf("%s: no not_applicable: the tool echoes no correlation id", c.ID)
		}
	}
	for _, id := range []string{"none.exit0", "none.exit3"} {
		if c := byID[id]; c.Verdict != report.Pass {
			t.Errorf("%s: %s %v (native %q)", id, c.Verdict, c.Violations, c.Native)
		}
	}
	const reset = "exit 255: connection reset"
	for _, id := range []string{"auth.reset.survive", "started.reset.survive"} {
		c := byID[id]
		ambiguous := slices.ContainsFunc(c.Violations, func(v report.Violation) bool { return v.Rule == verdict.RuleAmbiguous })
		if c.Native != reset || c.Verdict != report.Fail || !ambiguous {
			t.Errorf("%s: native %q, %s %v; want %q, fail, ambiguous_report", id, c.Native, c.Verdict, c.Violations, reset)
		}
	}
	if len(rep.Ambiguities) != 1 || rep.Ambiguities[0].Native != reset || rep.Reading != "ssh" {
		t.Errorf("ambiguities %+v (reading %q)", rep.Ambiguities, rep.Reading)
	} else if a := rep.Ambiguities[0]; !slices.Equal(a.Answers, []string{"local_failure/bounded", "outcome_unknown/reconcile_first"}) {
		t.Errorf("the reset conflates %v", a.Answers)
	}
	if rep.Summary.Fail != 2 {
		t.Errorf("summary %+v: want the two ambiguous cases failed", rep.Summary)
	}
	checkLogAgrees(t, dir.Path)
	// The case run's transcript carries the amended decision too.
	b, err := os.ReadFile(filepath.Join(dir.Path, byID["started.reset.survive"].Transcript))
	if err != nil {
		t.Fatal(err)
	}
	var tx struct {
		Verdict    report.Verdict     `json:"verdict"`
		Violations []report.Violation `json:"violations"`
	}
	if err := json.Unmarshal(b, &tx); err != nil {
		t.Fatal(err)
	}
	if tx.Verdict != report.Fail || !slices.ContainsFunc(tx.Violations, func(v report.Violation) bool { return v.Rule == verdict.RuleAmbiguous }) {
		t.Errorf("transcript says %s %v, want the amended fail with ambiguous_report", tx.Verdict, tx.Violations)
	}
}

// A reading judges one whole run: a repeated run (its case runs spooled as
// they end) or a shard (its own cases only) would judge the same tool
// otherwise, so Run refuses it before anything starts.
func TestReadingRefusesRepeatedRuns(t *testing.T) {
	rd, _ := reading.Builtin("ssh")
	ext := tools.External{Argv: []string{"true"}}
	cases := matrix.DefaultMatrix()[:1]
	for _, o := range []Options{
		{Tool: ext, Reading: rd, Cases: cases, Repeat: Repeat{Times: 2}},
		{Tool: ext, Reading: rd, Cases: cases, Shard: &report.ShardReport{}},
	} {
		if _, err := Run(context.Background(), o); !errors.Is(err, ErrReadingOneRun) {
			t.Errorf("Run(repeat %+v, shard %v): %v, want ErrReadingOneRun", o.Repeat, o.Shard != nil, err)
		}
	}
}
