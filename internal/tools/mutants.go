package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// MutantPrefix starts the name of every faulty built-in tool.
const MutantPrefix = "mutant:"

// Mutant is the reference client with one realistic defect.
type Mutant struct {
	name   string
	defect string
	// catches names the verdict assertion that must catch the defect.
	catches string
	run     func(ctx context.Context, t tool.Target, stdout, stderr io.Writer)
}

// Name implements tool.Tool.
func (m Mutant) Name() string { return MutantPrefix + m.name }

// OneHostOnly implements tool.OneHost: a mutant is the reference client on
// one host with one defect; it reports no hosts.
func (Mutant) OneHostOnly() {}

// Defect says in words what is wrong with the tool.
func (m Mutant) Defect() string { return m.defect }

// Catches names the verdict assertion that must catch this mutant.
func (m Mutant) Catches() string { return m.catches }

// Run implements tool.Tool.
func (m Mutant) Run(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
	m.run(ctx, t, stdout, stderr)
}

// honest runs the reference client and lets adjust rewrite the result.
func honest(c Client, adjust func(a Attempt, r *result.Result, t tool.Target)) func(context.Context, tool.Target, io.Writer, io.Writer) {
	return func(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
		a := c.Attempt(ctx, t)
		cat, retry, msg := Classify(a)
		r := resultFor(t, cat, retry, msg)
		if adjust != nil {
			adjust(a, &r, t)
		}
		writeReport(stdout, stderr, t, a, r)
	}
}

func set(r *result.Result, cat result.Category, retry result.Retry, msg string) {
	r.OK, r.Category, r.Retry, r.Message = cat == result.Succeeded, cat, retry, msg
}

// Mutants returns every faulty built-in tool, sorted by name.
func Mutants() []Mutant {
	ms := []Mutant{
		{
			name:    "error-is-confirmed-failure",
			defect:  "reports any error as confirmed_failure, as if the server had said the work failed",
			catches: report.AssertCategory,
			run: honest(Client{}, func(a Attempt, r *result.Result, _ tool.Target) {
				if !a.ExitReceived {
					set(r, result.ConfirmedFailure, result.Never, "the command failed")
				}
			}),
		},
		{
			name:    "lost-status-is-success",
			defect:  "treats a session that ended without an exit status as success",
			catches: report.AssertCategory,
			run: honest(Client{}, func(a Attempt, r *result.Result, _ tool.Target) {
				if a.RequestSent && !a.ExitReceived {
					set(r, result.Succeeded, result.Never, "the command finished")
				}
			}),
		},
		{
			name:    "local-failure-until-result",
			defect:  "reports everything short of an exit status as local_failure with a bounded retry",
			catches: report.AssertCategory,
			run: honest(Client{}, func(a Attempt, r *result.Result, _ tool.Target) {
				if !a.ExitReceived {
					set(r, result.LocalFailure, result.Bounded, "connection failed; safe to retry")
				}
			}),
		},
		{
			name:    "unknown-with-bounded-retry",
			defect:  "says outcome_unknown but tells the caller to retry within a bound, without reconciling",
			catches: report.AssertCategory,
			run: honest(Client{}, func(_ Attempt, r *result.Result, _ tool.Target) {
				if r.Category == result.OutcomeUnknown {
					r.Retry = result.Bounded
				}
			}),
		},
		{
			name:    "blind-retry",
			defect:  "runs the command a second time after any error, without checking what the first attempt did",
			catches: report.AssertNoBlind,
			run: func(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
				c := Client{}
				a := c.Attempt(ctx, t)
				if !a.ExitReceived {
					fmt.Fprintf(stderr, "first attempt: phase=%s; retrying\n", a.Phase)
					a = c.Attempt(ctx, t)
				}
				reportClassified(stdout, stderr, t, a)
			},
		},
		{
			name:    "no-deadlines",
			defect:  "sets no handshake deadline and sends no keepalives, so a blackholed connection hangs it",
			catches: report.AssertNoBlind,
			run:     honest(Client{NoDeadlines: true}, nil),
		},
		{
			name:    "leaks-identity",
			defect:  "appends the identity file's contents to the message when something goes wrong",
			catches: report.AssertEvidence,
			run: honest(Client{}, func(a Attempt, r *result.Result, t tool.Target) {
				if a.ExitReceived && a.ExitCode == 0 {
					return
				}
				key, err := os.ReadFile(t.Identity)
				if err == nil {
					r.Message += "; client config: identity=" + string(key)
				}
			}),
		},
		{
			name:    "conflates-credential-and-permission",
			defect:  "reports a rejected credential as authorization_denied and a denied command as authentication_failed",
			catches: report.AssertCategory,
			run: honest(Client{}, func(_ Attempt, r *result.Result, _ tool.Target) {
				switch r.Category {
				case result.AuthenticationFailed:
					r.Category = result.AuthorizationDenied
				case result.AuthorizationDenied:
					r.Category = result.AuthenticationFailed
				}
			}),
		},
		{
			name:    "ignores-host-key",
			defect:  "accepts any host key the server presents (InsecureIgnoreHostKey, StrictHostKeyChecking=no), so its credential and command go to a host nobody vouched for",
			catches: report.AssertNoBlind,
			run:     honest(Client{IgnoreHostKey: true}, nil),
		},
		{
			name:    "retries-rejected-credential",
			defect:  "tries the same credential again after the server rejected it",
			catches: report.AssertNoBlind,
			run: func(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
				c := Client{}
				a := c.Attempt(ctx, t)
				if a.AuthRejected {
					fmt.Fprintln(stderr, "credential rejected; trying again")
					a = c.Attempt(ctx, t)
				}
				reportClassified(stdout, stderr, t, a)
			},
		},
		{
			name:    "acts-on-malformed-id",
			defect:  "when the answer has no usable id it falls back to the request's id (response.id || request.id) and attaches a note to that record anyway",
			catches: report.AssertNoBlind,
			run: func(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
				c := Client{}
				a := c.Attempt(ctx, t)
				if a.ContractErr != nil {
					guess := "rec-" + t.CorrelationID
					follow := t
					follow.Command = "printf 'note attached to %s\n' " + guess
					fmt.Fprintf(stderr, "answer unusable (%v); guessing id %s\n", a.ContractErr, guess)
					a.ContractErr = nil
					c.Attempt(ctx, follow)
				}
				reportClassified(stdout, stderr, t, a)
			},
		},
		{
			name:    "agent-recreates",
			defect:  "an agent that, after a create whose outcome it cannot know, creates again without looking the record up",
			catches: report.AssertNoBlind,
			run:     Agent{Recreate: true}.Run,
		},
		{
			name:    "drops-correlation-id",
			defect:  "drops the correlation id it was given and reports one of its own",
			catches: report.AssertEvidence,
			run: honest(Client{}, func(_ Attempt, r *result.Result, _ tool.Target) {
				b := make([]byte, 6)
				rand.Read(b)
				r.CorrelationID = "req-" + hex.EncodeToString(b)
			}),
		},
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
	return ms
}

// FlakyRate is how often the flaky mutant misreports.
const FlakyRate = 0.1

// ShortLiveness is the keepalive reply deadline of
// mutant:short-timeout-is-local-failure: far below any slow link's round
// trip, far above loopback's.
const ShortLiveness = 60 * time.Millisecond

// ConditionalMutants returns the built-in tools whose defect shows only under
// some conditions, so a plain run of the default matrix may well pass them:
// one draws from the case run's seed (tool.Target.Seed) and is counted by a
// repeated run (sshrig run --repeat), and a replay of a failing case run
// fails again; one shows on a slow link only (sshrig run --link).
func ConditionalMutants() []Mutant {
	return []Mutant{{
		name:    "short-timeout-is-local-failure",
		defect:  fmt.Sprintf("waits only %v for a keepalive reply, shorter than a slow link's round trip, and reports its own timeout as local_failure with a bounded retry, even after the command was sent", ShortLiveness),
		catches: report.AssertCategory,
		run: func(ctx context.Context, t tool.Target, stdout, stderr io.Writer) {
			d := DeadlinesFor(t.Deadline)
			d.Liveness = ShortLiveness
			honest(Client{Deadlines: d}, func(a Attempt, r *result.Result, _ tool.Target) {
				if a.LivenessLost {
					set(r, result.LocalFailure, result.Bounded, "connection timed out; safe to retry")
				}
			})(ctx, t, stdout, stderr)
		},
	}, {
		name:    "sometimes-lost-status-is-success",
		defect:  fmt.Sprintf("in about %d runs in 100 (drawn from the case run's seed) treats a session that ended without an exit status as success, as a race in status handling does under some schedules", int(FlakyRate*100)),
		catches: report.AssertCategory,
		run: honest(Client{}, func(a Attempt, r *result.Result, t tool.Target) {
			draw := mrand.New(mrand.NewPCG(t.Seed, 0x666c616b79)).Float64() // "flaky"
			if a.RequestSent && !a.ExitReceived && draw < FlakyRate {
				set(r, result.Succeeded, result.Never, "the command finished")
			}
		}),
	}}
}

// ErrUnknownTool is returned by Lookup for a name that is no built-in tool.
var ErrUnknownTool = errors.New("tools: unknown tool")

// Names lists the built-in tools: reference first, the agent, then the mutants.
func Names() []string {
	var names []string
	for _, b := range Builtins() {
		names = append(names, b.Name)
	}
	return names
}

// Builtin describes a built-in tool: its name, what it gets wrong, and the
// assertion/rule that catches it ("" for the honest ones).
type Builtin struct {
	Name     string `json:"name"`
	CaughtBy string `json:"caught_by,omitempty"`
	Defect   string `json:"defect"`
}

// Builtins lists the built-in tools in the order they are documented: the
// reference, the agent, then every mutant.
func Builtins() []Builtin {
	out := []Builtin{
		{Name: "reference", Defect: "none: classifies honestly, with per-phase deadlines"},
		{Name: Agent{}.Name(), Defect: "none: an agent-like tool that looks a record up before it acts again (step sequences)"},
	}
	for _, m := range append(Mutants(), ConditionalMutants()...) {
		out = append(out, Builtin{Name: m.Name(), CaughtBy: m.Catches(), Defect: m.Defect()})
	}
	return out
}

// Lookup returns the built-in tool with that name, or the external program
// for "exec:COMMAND ARGS…".
func Lookup(name string) (tool.Tool, error) {
	if strings.HasPrefix(name, ExternalPrefix) {
		return ParseExternal(name)
	}
	switch name {
	case "reference":
		return Reference{}, nil
	case Agent{}.Name():
		return Agent{}, nil
	}
	for _, m := range append(Mutants(), ConditionalMutants()...) {
		if m.Name() == name {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
}
