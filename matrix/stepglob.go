package matrix

import (
	"path"
)

// stepNameChars are the characters idSafe keeps of a request's name;
// stepIDAlphabet is every character a step case's id can hold: those, and
// the dots between its parts.
const (
	stepNameChars  = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
	stepIDAlphabet = stepNameChars + "."
)

// CanMatchStepCase says whether a --cases glob (path.Match syntax, already
// checked) can match the id of some step case, before any preflight made
// them: an id is StepCasePrefix, a name of letters, digits, '_' and '-',
// a dot and a cut of StepIDCuts(). A glob that matched no case of the
// matrix and cannot match one of these ids selects nothing whatever the
// tool's conversation, so the run can stop before it starts anything.
//
// It walks the glob and that language of ids together: a state is a place
// in the glob and a place in an id, and the glob can match when both can
// end at once.
func CanMatchStepCase(glob string) bool {
	elems := globElems(glob)
	var suffixes []string
	for _, c := range StepIDCuts() {
		suffixes = append(suffixes, "."+c.String())
	}
	type state struct {
		elem int
		id   idState
	}
	start := state{0, idState{}}
	seen := map[state]bool{start: true}
	queue := []state{start}
	push := func(s state) {
		if !seen[s] {
			seen[s] = true
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s.elem == len(elems) {
			if s.id.accepts(suffixes) {
				return true
			}
			continue
		}
		e := elems[s.elem]
		if e == "*" {
			push(state{s.elem + 1, s.id})
		}
		for _, ch := range stepIDAlphabet {
			if e != "*" {
				if ok, _ := path.Match(e, string(ch)); !ok {
					continue
				}
			}
			for _, next := range s.id.next(byte(ch), suffixes) {
				if e == "*" {
					push(state{s.elem, next})
				} else {
					push(state{s.elem + 1, next})
				}
			}
		}
	}
	return false
}

// globElems splits a glob into "*" and patterns of one character each
// ("a", "?", "\\*", "[a-c]").
func globElems(glob string) []string {
	var out []string
	for i := 0; i < len(glob); {
		j := i + 1
		switch glob[i] {
		case '\\':
			j = min(i+2, len(glob))
		case '[':
			for j < len(glob) && glob[j] != ']' {
				if glob[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(glob))
		}
		out = append(out, glob[i:j])
		i = j
	}
	return out
}

// idState is a place in a step case's id: in its prefix (phase 0, at
// offset pos), in its name (phase 1, one character read at least), or in a
// suffix (phase 2, suffix number suffix, at offset pos).
type idState struct {
	phase, suffix, pos int
}

func (s idState) next(ch byte, suffixes []string) []idState {
	switch s.phase {
	case 0:
		if s.pos < len(StepCasePrefix) {
			if ch == StepCasePrefix[s.pos] {
				return []idState{{phase: 0, pos: s.pos + 1}}
			}
			return nil
		}
		if ch != '.' {
			return []idState{{phase: 1}}
		}
	case 1:
		if ch != '.' {
			return []idState{s}
		}
		var out []idState
		for i := range suffixes {
			out = append(out, idState{phase: 2, suffix: i, pos: 1})
		}
		return out
	case 2:
		if suf := suffixes[s.suffix]; s.pos < len(suf) && suf[s.pos] == ch {
			return []idState{{phase: 2, suffix: s.suffix, pos: s.pos + 1}}
		}
	}
	return nil
}

func (s idState) accepts(suffixes []string) bool {
	return s.phase == 2 && s.pos == len(suffixes[s.suffix])
}
