package verdict

import "strings"

// Step is one operation an agent-like tool ran on the server in a
// step-sequence case, as the server saw it, classified by the scenario.
type Step struct {
	Op string // StepCreate, StepLookup, StepNote, or StepUnknown
	// Found, for a lookup: the record existed when it ran.
	Found bool
	// Pending, for a lookup that did not find the record: a create could
	// still run when it looked (its request held, or its command running),
	// so "not found" was not the last word.
	Pending bool
	// Lost, for a lookup or a note: the case's cut landed in this call, so
	// its answer never reached the tool (matrix.Case.Call).
	Lost bool
}

// The operations of the record-and-note scenario: create is a mutation,
// lookup a probe, attach_note a mutation.
const (
	StepCreate  = "create"
	StepLookup  = "lookup"
	StepNote    = "attach_note"
	StepUnknown = "unknown"
)

// RuleTransition: the tool's next action did not follow from what it knew.
const RuleTransition = "transition"

// CheckSteps walks the operations the tool ran against the allowed
// transitions (seed 003):
//
//	create -> outcome_unknown -> lookup -> found -> attach_note      allowed
//	create -> outcome_unknown -> lookup -> not_found -> create -> …  allowed
//	create -> outcome_unknown -> create                              forbidden
//	create -> outcome_unknown -> lookup -> pending -> create         forbidden
//	create -> lookup -> lost -> lookup -> found -> attach_note      allowed
//	create -> attach_note -> outcome_unknown -> attach_note          forbidden
//
// A lookup whose answer was lost taught the tool nothing; a note whose
// answer was lost may or may not be on the record, and the tools cannot
// tell: a second note is blind, and the task is not known to be done.
//
// firstUnknown says the first create's result never reached the tool. It
// returns the path as text, whether the task reached its end (the note
// attached to a record known to exist), and the first forbidden transition.
func CheckSteps(steps []Step, firstUnknown bool) (path string, done bool, problem string) {
	var p []string
	state, creates := "start", 0
	fail := func(why string) (string, bool, string) {
		return strings.Join(p, " -> "), false, strings.Join(p, " -> ") + ": " + why
	}
	for _, s := range steps {
		p = append(p, s.Op)
		switch s.Op {
		case StepUnknown:
			return fail("ran a command the task does not know, such as a note on a guessed id")
		case StepCreate:
			creates++
			switch state {
			case "start", "not_found":
				state = "created"
				if creates == 1 && firstUnknown {
					state = "unknown"
					p = append(p, "outcome_unknown")
				}
			case "unknown":
				return fail("created again without looking the record up first")
			case "pending":
				return fail("created again while the first create could still run: the lookup looked before the server had settled it")
			case "found":
				return fail("created again although the lookup found the record")
			case "note_unknown":
				return fail("created again after a note whose outcome is unknown: the record exists")
			default:
				return fail("created twice")
			}
		case StepLookup:
			if s.Lost {
				p = append(p, "lost")
				continue
			}
			if state == "noted" || state == "note_unknown" {
				// Reading the record back after the note shows no note:
				// it changes nothing the tool knows of the note.
				p = append(p, map[bool]string{true: "found", false: "not_found"}[s.Found])
				continue
			}
			if state == "start" {
				state = "not_found"
			}
			if s.Found {
				state = "found"
				p = append(p, "found")
			} else if s.Pending {
				state = "pending"
				p = append(p, "pending")
			} else {
				state = "not_found"
				p = append(p, "not_found")
			}
		case StepNote:
			switch state {
			case "created", "found":
				state = "noted"
				if s.Lost {
					state = "note_unknown"
					p = append(p, "outcome_unknown")
				}
			case "note_unknown":
				return fail("attached the note again without knowing whether the first was attached")
			case "unknown", "pending":
				return fail("attached a note without knowing the record exists")
			case "not_found":
				return fail("attached a note to a record the lookup did not find")
			default:
				return fail("attached a note before creating anything, or twice")
			}
		}
	}
	return strings.Join(p, " -> "), state == "noted", ""
}
