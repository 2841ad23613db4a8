package reading

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sshrig/sshrig/result"
)

// Answer is an honest category and retry.
type Answer struct {
	Category result.Category `json:"category"`
	Retry    result.Retry    `json:"retry"`
}

func (a Answer) String() string { return string(a.Category) + "/" + string(a.Retry) }

// NextAction is what an answer lets its reader do next: "done" for a
// success, otherwise its retry instruction. Two answers that differ here
// call for different actions (retry vs reconcile first, stop vs reconcile
// first); two that agree (confirmed_failure/never and
// authorization_denied/never: stop either way) do not.
func (a Answer) NextAction() string {
	if a.Category == result.Succeeded {
		return "done"
	}
	return string(a.Retry)
}

// Seen is one case run as a reading saw it: the native value the tool's
// report became, and the honest answer for the case.
type Seen struct {
	Case   string
	Native string
	Honest Answer
}

// Ambiguity is a native value that stood, across a run, for honest answers
// calling for different next actions: no reader of that value alone can
// act on it safely.
type Ambiguity struct {
	Native string `json:"native"`
	// Cases lists, per honest answer, the cases where the value stood for
	// it, in the order seen.
	Cases map[string][]string `json:"cases"`
	// Answers are the honest answers the value conflates, in a stable order.
	Answers []string `json:"answers"`
}

// CaseCount is how many cases the value stood for.
func (a Ambiguity) CaseCount() int {
	n := 0
	for _, cs := range a.Cases {
		n += len(cs)
	}
	return n
}

// Detail says, for one case, what the value conflates.
func (a Ambiguity) Detail() string {
	var parts []string
	for _, ans := range a.Answers {
		cs := a.Cases[ans]
		parts = append(parts, fmt.Sprintf("%s at %d case(s), e.g. %s", ans, len(cs), cs[0]))
	}
	return fmt.Sprintf("the tool's report %q stands for answers that call for different next actions: %s; "+
		"a reader of that report alone cannot tell which to do", a.Native, strings.Join(parts, "; "))
}

// Ambiguities groups seen case runs by native value and returns the values
// whose honest answers differ in their next action, sorted by value.
func Ambiguities(seen []Seen) []Ambiguity {
	byNative := map[string]*Ambiguity{}
	actions := map[string]map[string]bool{}
	var order []string
	for _, s := range seen {
		if s.Native == "" {
			continue
		}
		a, ok := byNative[s.Native]
		if !ok {
			a = &Ambiguity{Native: s.Native, Cases: map[string][]string{}}
			byNative[s.Native], actions[s.Native] = a, map[string]bool{}
			order = append(order, s.Native)
		}
		key := s.Honest.String()
		if _, ok := a.Cases[key]; !ok {
			a.Answers = append(a.Answers, key)
		}
		a.Cases[key] = append(a.Cases[key], s.Case)
		actions[s.Native][s.Honest.NextAction()] = true
	}
	sort.Strings(order)
	var out []Ambiguity
	for _, n := range order {
		if len(actions[n]) > 1 {
			a := byNative[n]
			sort.Strings(a.Answers)
			out = append(out, *a)
		}
	}
	return out
}
