package matrix

import (
	"fmt"
	"path"
	"strings"

	"github.com/sshrig/sshrig/fault"
)

// Step cases: what a conversation yields.
const (
	// MaxSteps caps the steps a conversation yields step cases for (each
	// step gives StepCuts' cases): a tool that sends a hundred requests
	// before its workload would otherwise turn one run into hundreds of
	// cases. The preflight says how many steps the cap left out.
	MaxSteps = 16
	// StepUploadBytes is where an upload's step case cuts it: after this
	// many bytes of the file arrived. The wrapped workload alone is far
	// longer, so the file is always left partial.
	StepUploadBytes = 64
	// StepCasePrefix starts every step case's id: --cases 'step.*' selects them.
	StepCasePrefix = "step."
)

// StepCuts are the cuts every step gets: the transport dies (RST), or goes
// silent while the sockets stay open.
func StepCuts() []fault.Cut { return []fault.Cut{fault.Reset, fault.Blackhole} }

// ReuseCuts are the cuts a session that reuses a connection also gets: a
// session channel opened on a connection that already carried one (an
// OpenSSH ControlMaster's multiplexed session) meets the helper that owns
// the connection killed, wedged or expired just as it asks for it
// (fault.HelperCuts), and, where that session carries the workload, just
// after the helper sent the workload's request.
func ReuseCuts() []fault.Cut { return fault.HelperCuts() }

// StepIDCuts are every cut a step case's id can end with.
func StepIDCuts() []fault.Cut { return append(StepCuts(), ReuseCuts()...) }

// StepSelection says which step cases a run adds once the preflight learned
// the tool's conversation.
type StepSelection struct {
	// Globs select step cases by id (path.Match syntax); none selects none.
	Globs []string
	// Required are globs that matched no matrix case: each must match a
	// step case, or the run stops after the preflight (a typo must not
	// silently shrink a run).
	Required []string
}

// StepCases makes the step cases of a conversation a preflight learned: for
// every request before the workload's (prep-step) and after its exit status
// was sent (cleanup-step), a cut after the server received it and before it
// answered, under each of StepCuts; and for an upload (SFTP writes, or
// scp -t) before the workload, a cut after StepUploadBytes of the file.
// A later connection before the workload's request (the one that carries a
// workload uploaded over the first) is cut at its handshake and at its
// authentication (moments handshake and auth, held on that connection
// only). Requests the moments already cut are left out: connection
// arrivals (the accept moment), the case's first session channel (channel), the workload's
// own request (exec), anything while the workload runs, and incidental
// requests (fault.Incidental). A run of requests of one name (the writes
// of an upload) yields one step, its first. capped counts the steps left out
// beyond MaxSteps. A session that reuses its connection also gets
// ReuseCuts' cases; so does the workload's own request when its session
// reuses a connection, at moment exec: the helper had sent the command
// when it died, so its client cannot fall back to a connection of its own
// (as OpenSSH's multiplexed client does when its master dies before the
// session opened) and what it can know is that the request left.
func StepCases(conv []fault.Request) (cases []Case, capped int) {
	steps := 0
	firstSession := true
	sessionsOn := map[int]int{} // sessions so far, by connection
	reusing := map[int]bool{}   // sessions opened on a connection that had carried one
	upload := false
	prev := ""
	pos := 0 // the request's place in the conversation's shape: stable across runs
	for _, r := range conv {
		if fault.Incidental(r.Name) {
			continue
		}
		same := r.Name == prev
		prev = r.Name
		if !same {
			pos++
		}
		reuse := false
		if r.Name == "session" {
			sessionsOn[r.Conn]++
			reuse = sessionsOn[r.Conn] > 1
			reusing[r.Session] = reuse
		}
		if r.Place == fault.WorkloadPlace && reusing[r.Session] {
			if steps == MaxSteps {
				capped++
				continue
			}
			steps++
			name := fmt.Sprintf("%02d-%s", pos, idSafe(r.Name))
			cases = append(cases, stepCasesUnder(ReuseCuts(), name, fault.Exec, fault.Step{}, fmt.Sprintf(
				"exec: received the workload's %s on a session that reuses its connection, not yet answered; the helper that sent it is cut", r))...)
			continue
		}
		if r.Name == "session" && firstSession {
			firstSession = false
			continue
		}
		if r.Place == fault.BeforeWorkload && (r.Name == "sftp-write" || r.Detail == "scp -t") {
			upload = true
		}
		if r.Name == fault.ConnectionRequest {
			// The first connection's handshake and authentication are the
			// matrix's own moments; a later one's, before the workload
			// (the connection that carries a workload uploaded over the
			// first), are cut here.
			if r.Occurrence > 1 && r.Place == fault.BeforeWorkload {
				if steps == MaxSteps {
					capped++
					continue
				}
				steps++
				st := fault.Step{Request: r.Name, Occurrence: r.Occurrence}
				for _, m := range []fault.Moment{fault.Handshake, fault.Auth} {
					name := fmt.Sprintf("%02d-connection-%s", pos, m)
					cases = append(cases, stepCasesAt(name, m, st, fmt.Sprintf("%s of %s (conn %d), before the workload's request", m, r.Name, r.Conn))...)
				}
			}
			continue
		}
		if same {
			continue
		}
		var m fault.Moment
		switch r.Place {
		case fault.BeforeWorkload:
			m = fault.PrepStep
		case fault.AfterWorkload:
			m = fault.CleanupStep
		default:
			continue
		}
		if steps == MaxSteps {
			capped++
			continue
		}
		steps++
		st := fault.Step{Request: r.Name, Occurrence: r.Occurrence}
		name := fmt.Sprintf("%02d-%s", pos, idSafe(r.Name))
		notes := fmt.Sprintf("%s: received %s, not yet answered", m, r)
		cases = append(cases, stepCasesAt(name, m, st, notes)...)
		if reuse {
			cases = append(cases, stepCasesUnder(ReuseCuts(), name, m, st, notes+"; the session reuses its connection, whose helper is cut")...)
		}
	}
	if upload {
		st := fault.Step{Request: "upload", UploadBytes: StepUploadBytes}
		cases = append(cases, stepCasesAt(fmt.Sprintf("upload-%dB", StepUploadBytes), fault.PrepStep, st,
			fmt.Sprintf("the upload of the workload cut after %d bytes of the file arrived", StepUploadBytes))...)
	}
	return cases, capped
}

func stepCasesAt(name string, m fault.Moment, st fault.Step, notes string) []Case {
	return stepCasesUnder(StepCuts(), name, m, st, notes)
}

func stepCasesUnder(cuts []fault.Cut, name string, m fault.Moment, st fault.Step, notes string) []Case {
	var out []Case
	for _, cut := range cuts {
		c := Case{ID: StepCasePrefix + name + "." + cut.String(), Moment: m, Cut: cut,
			Disposition: fault.Survive, Operation: DefaultOperation, Notes: notes}
		if m.IsStep() || st.Request != "" {
			s := st
			c.Step = &s
		}
		out = append(out, c)
	}
	return out
}

// idSafe maps a request's name into a case id's alphabet.
func idSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(stepNameChars, r) {
			return r
		}
		return '-'
	}, s)
}

// SelectSteps keeps the step cases sel selects, in order, and checks that
// each required glob matched one.
func SelectSteps(cases []Case, sel StepSelection) ([]Case, error) {
	var out []Case
	for _, c := range cases {
		for _, g := range sel.Globs {
			if match(g, c.ID) {
				out = append(out, c)
				break
			}
		}
	}
	for _, g := range sel.Required {
		hit := false
		for _, c := range cases {
			hit = hit || match(g, c.ID)
		}
		if !hit {
			if len(cases) == 0 {
				return nil, &SelectionError{fmt.Sprintf("--cases %q matches no case: the tool's conversation has no step besides its workload's request, so it has no step cases (see 'sshrig cases')", g)}
			}
			return nil, &SelectionError{fmt.Sprintf("--cases %q matches no case nor any of the tool's %d step cases (see 'sshrig cases' and the preflight's conversation in report.json)", g, len(cases))}
		}
	}
	return out, nil
}

// SelectionError is a --cases glob that matched nothing, found once the
// step cases were known.
type SelectionError struct{ msg string }

func (e *SelectionError) Error() string { return e.msg }

// SplitSelection splits --cases globs between the matrix and the step cases
// a run makes after its preflight: every glob selects among both; a glob
// that matches no matrix case must match a step case. No globs selects
// every case of both.
func SplitSelection(matrix []Case, globs []string) (cases []Case, steps StepSelection, err error) {
	if len(globs) == 0 {
		return matrix, StepSelection{Globs: []string{"*"}}, nil
	}
	var forMatrix []string
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return nil, StepSelection{}, fmt.Errorf("bad --cases pattern %q: %v", g, err)
		}
		if _, err := Select(matrix, []string{g}); err == nil {
			forMatrix = append(forMatrix, g)
		} else {
			steps.Required = append(steps.Required, g)
		}
	}
	steps.Globs = globs
	if len(forMatrix) > 0 {
		cases, err = Select(matrix, forMatrix)
	}
	return cases, steps, err
}
