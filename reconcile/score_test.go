package reconcile

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Answer
		problem string // substring of the error; "" means valid
	}{
		{`{"state": "not_started", "evidence": "no marker"}`, Answer{AnswerNotStarted, "no marker"}, ""},
		{"  \n{\"state\":\"in_progress\"}\n\n", Answer{State: AnswerInProgress}, ""},
		{`{"evidence": "x", "state": "duplicated"}`, Answer{AnswerDuplicated, "x"}, ""},
		{`{"state": "unknown", "evidence": ""}`, Answer{State: AnswerUnknown}, ""},
		{"", Answer{}, "empty output"},
		{" \n", Answer{}, "empty output"},
		{"hello", Answer{}, "invalid JSON at offset 0"},
		{`{"state": "completed"`, Answer{}, "ends inside a value"},
		{`["completed"]`, Answer{}, "not a JSON object at offset 0 (found an array)"},
		{`"completed"`, Answer{}, "not a JSON object"},
		{`{"state": "completed"} {"state": "failed"}`, Answer{}, "trailing data after the JSON object at offset 23"},
		{"{\"state\": \"completed\"}\nlog line", Answer{}, "trailing data"},
		{`{"state": "completed", "exit": 0}`, Answer{}, `unknown field "exit" (allowed: state, evidence)`},
		{`{"State": "completed"}`, Answer{}, `unknown field "State"`},
		{`{"state": "completed", "state": "failed"}`, Answer{}, `duplicate field "state"`},
		{`{"evidence": "x"}`, Answer{}, `missing field "state"`},
		{`{}`, Answer{}, `missing field "state"`},
		{`{"state": "done"}`, Answer{}, `unknown state "done" (want one of: not_started, in_progress, completed, failed, duplicated, unknown)`},
		{`{"state": ""}`, Answer{}, `unknown state ""`},
		{`{"state": 3}`, Answer{}, `field "state" is a number, want a string`},
		{`{"state": null}`, Answer{}, `field "state" is null, want a string`},
		{`{"state": "completed", "evidence": ["a"]}`, Answer{}, `field "evidence" is an array, want a string`},
		{`{"state": "completed", "evidence": {"a": 1}}`, Answer{}, `field "evidence" is an object`},
		{`{"state": "completed"}` + strings.Repeat(" ", MaxAnswerSize), Answer{}, "an answer is at most 65536 bytes"},
	} {
		got, err := ParseAnswer([]byte(tc.in))
		switch {
		case tc.problem == "" && err != nil:
			t.Errorf("ParseAnswer(%q): %v", tc.in, err)
		case tc.problem == "" && got != tc.want:
			t.Errorf("ParseAnswer(%q) = %+v, want %+v", tc.in, got, tc.want)
		case tc.problem != "" && err == nil:
			t.Errorf("ParseAnswer(%q) = %+v, want an error mentioning %q", tc.in, got, tc.problem)
		case tc.problem != "" && !strings.Contains(err.Error(), tc.problem):
			t.Errorf("ParseAnswer(%q): %v, want it to mention %q", tc.in, err, tc.problem)
		}
	}
}

func TestScenarioWant(t *testing.T) {
	want := map[Scenario]AnswerState{
		NeverStarted:     AnswerNotStarted,
		StartedKilled:    AnswerFailed,
		StillRunning:     AnswerInProgress,
		CompletedZero:    AnswerCompleted,
		CompletedNonZero: AnswerFailed,
		ExecutedTwice:    AnswerDuplicated,
	}
	if len(Scenarios()) != len(want) {
		t.Fatalf("%d scenarios, want %d", len(Scenarios()), len(want))
	}
	for _, s := range Scenarios() {
		if s.Want() != want[s] {
			t.Errorf("%s: want %s, got %s", s, want[s], s.Want())
		}
	}
}

func code(n int) *int { return &n }

// TestScenarioCheck: a state is produced only when the truth is exactly it;
// anything else (including a disagreement of the two sources) is not.
func TestScenarioCheck(t *testing.T) {
	truths := map[string]Truth{
		"none":         {State: NotStarted},
		"killed":       {State: Started, Starts: 1},
		"running":      {State: Running, Starts: 1},
		"ok":           {State: Completed, Starts: 1, Completes: 1, ExitCode: code(0)},
		"exit3":        {State: Completed, Starts: 1, Completes: 1, ExitCode: code(3)},
		"twice":        {State: Completed, Starts: 2, Completes: 2, ExitCode: code(0)},
		"twice-killed": {State: Started, Starts: 2, Completes: 1},
		"disagree":     {State: NotStarted, Disagreement: "pid 7: the ledger says started, the server says completed"},
	}
	produced := map[Scenario]string{
		NeverStarted: "none", StartedKilled: "killed", StillRunning: "running",
		CompletedZero: "ok", CompletedNonZero: "exit3", ExecutedTwice: "twice",
	}
	for _, s := range Scenarios() {
		for name, truth := range truths {
			err := s.Check(truth)
			if want := produced[s] == name; (err == nil) != want {
				t.Errorf("%s.Check(%s) = %v, want produced=%v", s, name, err, want)
			}
		}
	}
	err := NeverStarted.Check(truths["disagree"])
	if err == nil || !strings.Contains(err.Error(), "disagree") {
		t.Errorf("a disagreement is not reported as such: %v", err)
	}
	err = StartedKilled.Check(truths["ok"])
	if err == nil || !strings.Contains(err.Error(), "wanted started and killed") || !strings.Contains(err.Error(), "the truth is completed(0)") {
		t.Errorf("the error does not say what was wanted and what was found: %v", err)
	}
}

func TestGrade(t *testing.T) {
	for _, tc := range []struct {
		s    Scenario
		a    *Answer
		want Mark
	}{
		{NeverStarted, &Answer{State: AnswerNotStarted}, Correct},
		{NeverStarted, &Answer{State: AnswerUnknown}, Weak},
		{NeverStarted, &Answer{State: AnswerFailed}, Wrong},
		{NeverStarted, nil, NoAnswer},
		{StartedKilled, &Answer{State: AnswerFailed}, Correct},
		{StartedKilled, &Answer{State: AnswerInProgress}, Wrong},
		{ExecutedTwice, &Answer{State: AnswerCompleted}, Wrong},
	} {
		if got := Grade(tc.s, tc.a); got != tc.want {
			t.Errorf("Grade(%s, %+v) = %s, want %s", tc.s, tc.a, got, tc.want)
		}
	}
}

// TestMatrix: every cell off the right answer is named, weak ones apart.
func TestMatrix(t *testing.T) {
	m := NewMatrix()
	for _, s := range Scenarios() {
		m.Add(s, &Answer{State: s.Want()})
	}
	if w := m.WrongCells(); len(w) != 0 {
		t.Fatalf("all right, yet wrong cells %v", w)
	}
	m.Add(StartedKilled, &Answer{State: AnswerCompleted})
	m.Add(StartedKilled, &Answer{State: AnswerCompleted})
	m.Add(StillRunning, nil)
	m.Add(NeverStarted, &Answer{State: AnswerUnknown})
	var wrong, weak []string
	for _, c := range m.WrongCells() {
		wrong = append(wrong, c.Text)
	}
	for _, c := range m.WeakCells() {
		weak = append(weak, c.Text)
	}
	wantWrong := []string{
		"truth started-and-killed, probe said completed (2 times)",
		"truth still-running, probe gave no answer",
	}
	if strings.Join(wrong, "|") != strings.Join(wantWrong, "|") {
		t.Errorf("wrong cells %q, want %q", wrong, wantWrong)
	}
	if want := "truth never-started, probe said unknown (weak)"; len(weak) != 1 || weak[0] != want {
		t.Errorf("weak cells %q, want [%q]", weak, want)
	}
	var b bytes.Buffer
	m.WriteTable(&b)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 1+len(Scenarios()) {
		t.Fatalf("table has %d lines:\n%s", len(lines), b.String())
	}
	if f := strings.Fields(lines[2]); strings.Join(f, " ") != "started-and-killed . . 2 [1] . . ." {
		t.Errorf("started-and-killed row %q", lines[2])
	}
	if f := strings.Fields(lines[3]); strings.Join(f, " ") != "still-running . [1] . . . . 1" {
		t.Errorf("still-running row %q", lines[3])
	}
}
