package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// caseFacts is the part of a case report that must not change.
type caseFacts struct {
	ID         string `json:"id"`
	Verdict    string `json:"verdict"`
	Grade      string `json:"grade"`
	Truth      *truth `json:"truth"`
	Violations []struct {
		Assertion string `json:"assertion"`
		Rule      string `json:"rule"`
	} `json:"violations"`
}

type truth struct {
	State     string `json:"state"`
	Starts    int    `json:"starts"`
	Completes int    `json:"completes"`
	ExitCode  *int   `json:"exit_code"`
}

func (t *truth) String() string {
	if t == nil {
		return "-"
	}
	s := fmt.Sprintf("%s starts=%d completes=%d", t.State, t.Starts, t.Completes)
	if t.ExitCode != nil {
		s += fmt.Sprintf(" exit=%d", *t.ExitCode)
	}
	return s
}

func (c caseFacts) rules() string {
	rs := make([]string, 0, len(c.Violations))
	for _, v := range c.Violations {
		rs = append(rs, v.Assertion+"/"+v.Rule)
	}
	sort.Strings(rs)
	return "[" + strings.Join(rs, " ") + "]"
}

func load(path string) ([]caseFacts, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r struct {
		Cases []caseFacts `json:"cases"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Cases) == 0 {
		return nil, fmt.Errorf("%s: no cases", path)
	}
	return r.Cases, nil
}

// compare writes one line per difference to w and returns how many cases it
// compared and how many differences it found.
func compare(before, after []caseFacts, w io.Writer) (compared, diffs int) {
	byID := make(map[string]caseFacts, len(after))
	for _, c := range after {
		byID[c.ID] = c
	}
	seen := make(map[string]bool, len(before))
	for _, b := range before {
		seen[b.ID] = true
		a, ok := byID[b.ID]
		if !ok {
			fmt.Fprintf(w, "%s: missing after\n", b.ID)
			diffs++
			continue
		}
		compared++
		field := func(name, x, y string) {
			if x != y {
				fmt.Fprintf(w, "%s: %s %q -> %q\n", b.ID, name, x, y)
				diffs++
			}
		}
		field("verdict", b.Verdict, a.Verdict)
		field("grade", b.Grade, a.Grade)
		field("truth", b.Truth.String(), a.Truth.String())
		field("violations", b.rules(), a.rules())
	}
	for _, a := range after {
		if !seen[a.ID] {
			fmt.Fprintf(w, "%s: new after\n", a.ID)
			diffs++
		}
	}
	return compared, diffs
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: reportcmp BEFORE/report.json AFTER/report.json")
		os.Exit(2)
	}
	before, err := load(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "reportcmp:", err)
		os.Exit(2)
	}
	after, err := load(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "reportcmp:", err)
		os.Exit(2)
	}
	n, d := compare(before, after, os.Stdout)
	fmt.Printf("%d cases compared, differences: %d\n", n, d)
	if d > 0 {
		os.Exit(1)
	}
}
