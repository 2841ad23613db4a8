package matrix

import (
	_ "embed"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/operations"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// Case is one row of the matrix.
type Case struct {
	ID          string // stable, e.g. "started.reset.survive"
	Alias       string // e.g. "C05"; may be empty
	Moment      fault.Moment
	Cut         fault.Cut // moot for none and refuse; fault.Stall holds the answer instead (C05)
	Disposition fault.Disposition
	// ExitCode is what the workload exits with.
	ExitCode int
	// Operation names what the tool attempts; tools echo it.
	Operation string
	// Command is the workload before marker wrapping; empty means the
	// default workload, which prints two lines and exits with ExitCode.
	Command string
	// OutputBytes is N for the output moment; default fault.DefaultOutputBytes.
	OutputBytes int64
	Notes       string

	// Credential: the case gets a credential the server accepts at set-up
	// and rejects at the call (C02).
	Credential fault.Credential
	// Refusal: the server refuses the work (C03 deny-exec, C07 reject-session).
	Refusal fault.Refusal
	// Fixture names an answer of operation create_record that breaks its
	// contract (C04), such as "id-null" (docs/matrix.md lists them).
	Fixture string
	// Scenario, when set, makes the case a step sequence for agent-like
	// tools (ScenarioRecordNote).
	Scenario string
	// Approval, for an agent under test (sshrig agent, matrix/agent.yaml),
	// makes every call that changes something need the person's approval,
	// and says how the person the rig plays answers (tool.ApprovalModes).
	Approval string
	// Call, in the record-note scenario, is the call the case's moment
	// lands in: the create (CallCreate, the default: the workload), or the
	// first lookup or the first note on the true record (CallLookup,
	// CallNote), cut while the create ran whole (CallMoments).
	Call string
	// ReconcileProbe is the operation's reconcile probe: a shell command
	// run on the target that prints one answer about the correlation id
	// (docs/reconcile.md). Tools get it as Target.Reconcile.
	ReconcileProbe string
	// Host replaces the host the tool dials (C01: UnresolvableHost).
	Host string
	// ChangedHostKey: the known_hosts the tool gets (and the key an
	// in-process client pins) is not the server's host key, as after a
	// reinstall or under an impostor (C08). The honest tool stops at the
	// key exchange: it sends nothing, and no retry may go to that host
	// until a person has looked.
	ChangedHostKey bool
	// Hop, when set, puts a jump host in front of the target and names the
	// hop the cut kills at the target's moment (matrix/jump.yaml, sshrig
	// run --jump): the tool's connection to the jump host, or the jump
	// host's to the target. With moment refuse it is a dead target behind
	// a live jump host.
	Hop fault.Hop
	// CutHosts, in a run on a fleet (sshrig run --hosts N,
	// matrix/fleet.yaml), is how many of the case's hosts the cut kills
	// at its moment (default 1); the others run the operation without a
	// fault. It must leave at least one host uncut.
	CutHosts int
	// RebootPause, for cut reboot, is how long the case's host stays down
	// (default fault.DefaultRebootPause).
	RebootPause time.Duration
	// Budget overrides the run's deadline for this case.
	Budget time.Duration
	// Expect overrides the honest category and retry.
	Expect *Expected
	// Line is where the case is defined in its matrix file.
	Line int
	// Draw, set for a repeated run's case runs, is what was drawn for
	// this one (rig/repeat.go).
	Draw *Draw
	// Link puts slow-link faults on the case's cutter (matrix/link.go).
	Link *Link
	// AnswerDelay delays the server's answer to each channel request of
	// the case (matrix/answerdelay.go).
	AnswerDelay *AnswerDelay
	// Step, for a step case (moments prep-step and cleanup-step), is the
	// request of the tool's conversation where the cut lands. Step cases
	// are made from the conversation a preflight learned (StepCases); no
	// matrix file names them.
	Step *fault.Step
}

// Expectation is the category and retry this case's evidence calls for when
// it is not a transport cut's: an explicit expect, or what the scenario
// implies (a rejected credential, a refusal, a broken contract).
func (c Case) Expectation() *Expected {
	switch {
	case c.Expect != nil:
		e := *c.Expect
		return &e
	case c.Credential != 0:
		return &Expected{Category: result.AuthenticationFailed, Retry: result.Never}
	case c.ChangedHostKey:
		return &Expected{Category: result.LocalFailure, Retry: result.Never}
	case c.Refusal == fault.DenyExec:
		return &Expected{Category: result.AuthorizationDenied, Retry: result.Never}
	case c.Refusal == fault.RejectSession:
		return &Expected{Category: result.RateLimited, Retry: result.AfterDelay}
	case c.Fixture != "":
		return &Expected{Category: result.MalformedResponse, Retry: result.Never}
	case c.PersonRefuses():
		// The person refused, or never answered: nothing may be done.
		return &Expected{Category: result.AuthorizationDenied, Retry: result.Never}
	}
	return nil
}

// PersonRefuses reports whether the person the rig plays for an agent
// refuses its approvals (deny) or never answers them (silent): nothing of
// the case may then be done, nor reach the server.
func (c Case) PersonRefuses() bool {
	return c.Approval == tool.ApprovalDeny || c.Approval == tool.ApprovalSilent
}

// CutName is the case's cut as reports and listings name it; "" where
// nothing is cut (none, refuse).
func (c Case) CutName() string {
	if !c.Moment.HasCut() {
		return ""
	}
	return c.Cut.String()
}

// ScenarioRecordNote is the step sequence of seed 003: create a record, read
// it back, attach a note. The tool gets the create as its command, and a
// lookup (a probe) and the note (a mutation, with {id}) as Target.Lookup and
// Target.FollowUp.
const ScenarioRecordNote = "record-note"

// The calls of the record-note scenario a case's moment can land in
// (Case.Call).
const (
	CallCreate = "create"
	CallLookup = "lookup"
	CallNote   = "note"
)

// Calls lists the calls a case's moment can land in.
func Calls() []string { return []string{CallCreate, CallLookup, CallNote} }

// CallMoments are the moments a lookup or a note can be cut at: those of
// its exec request and its answer. Started needs the markers only the
// create's command carries.
func CallMoments() []fault.Moment {
	return []fault.Moment{fault.Exec, fault.Finished, fault.ExitStatus}
}

// CutsCall reports whether the case's moment lands in a call other than
// the create (Case.Call).
func (c Case) CutsCall() bool { return c.Call != "" && c.Call != CallCreate }

// DefaultOperation is the operation name of the default workload.
const DefaultOperation = "run_workload"

// Workload is the command the case runs for correlation id, before marker
// wrapping.
func (c Case) Workload(id string) string {
	switch {
	case c.Command != "":
		return c.Command
	case c.Scenario != "":
		return operations.CreateAndStore(id)
	case c.Fixture != "":
		return operations.Command(operations.Fixture(c.Fixture).Body(id))
	case c.Operation == operations.CreateRecord:
		return operations.Command(operations.Answer(id))
	}
	w := "printf 'sshrig workload: step one\\n'; printf 'sshrig workload: step two\\n'"
	if c.ExitCode != 0 {
		w += fmt.Sprintf("; exit %d", c.ExitCode)
	}
	return w
}

//go:embed default.yaml
var defaultMatrixYAML []byte

// DefaultMatrixFile is the default matrix's name in error messages.
const DefaultMatrixFile = "default.yaml (embedded)"

// DefaultMatrix is the embedded default matrix (matrix/default.yaml):
// every moment x {reset, close, blackhole, kill-helper} x the dispositions
// that matter there, with exit codes 0 and non-zero where the caller receives
// a result, then seed 003's rows C01-C07 and C08 (a changed host key). Kill-helper cases apply only to
// tools that run as separate programs.
func DefaultMatrix() []Case { return embedded(DefaultMatrixFile, defaultMatrixYAML) }

// DefaultMatrixYAML is the embedded default matrix file, as written.
func DefaultMatrixYAML() []byte { return append([]byte(nil), defaultMatrixYAML...) }

// embedded loads a matrix file built into the program; a test of each
// proves it loads, so a failure here is a broken build.
func embedded(name string, yaml []byte) []Case {
	cases, err := LoadMatrix(name, yaml)
	if err != nil {
		panic("rig: the embedded matrix " + name + " does not load: " + err.Error())
	}
	return cases
}

//go:embed server.yaml
var serverMatrixYAML []byte

// ServerMatrixFile names the embedded server matrix in errors and reports.
const ServerMatrixFile = "server.yaml (embedded)"

// ServerMatrix is the embedded matrix of the faults the far side makes
// (matrix/server.yaml, docs/server-faults.md): the server serving the case
// crashes, its host reboots, or a command's channel ends without its exit
// status, each at the moments where it can come.
func ServerMatrix() []Case { return embedded(ServerMatrixFile, serverMatrixYAML) }

//go:embed agent.yaml
var agentMatrixYAML []byte

// AgentMatrixFile names the embedded agent matrix in errors and reports.
const AgentMatrixFile = "agent.yaml (embedded)"

// AgentMatrix is the embedded matrix of an agent under test (sshrig agent,
// matrix/agent.yaml, docs/agents.md): the record-and-note task with a cut
// at each moment of its create, and the approval cases.
func AgentMatrix() []Case { return embedded(AgentMatrixFile, agentMatrixYAML) }

//go:embed kernel.yaml
var kernelMatrixYAML []byte

//go:embed jump.yaml
var jumpMatrixYAML []byte

//go:embed fleet.yaml
var fleetMatrixYAML []byte

// FleetMatrixFile is the fleet matrix's name in error messages.
const FleetMatrixFile = "fleet.yaml (embedded)"

// MaxHosts bounds a fleet's hosts (sshrig run --hosts N): every host is a
// case of the server's own, with a cutter of its own.
const MaxHosts = 64

// FleetMatrix is the embedded matrix of cases on a fleet
// (matrix/fleet.yaml): one host (or a few) cut at a moment while the
// others complete. `sshrig run --hosts N` runs it instead of the default
// matrix.
func FleetMatrix() []Case { return embedded(FleetMatrixFile, fleetMatrixYAML) }

// JumpMatrixFile is the jump matrix's name in error messages.
const JumpMatrixFile = "jump.yaml (embedded)"

// JumpMatrix is the embedded matrix of cases behind a jump host
// (matrix/jump.yaml): each moment cut on either hop, and a dead target
// behind a live jump host. `sshrig run --jump` runs it instead of the
// default matrix.
func JumpMatrix() []Case { return embedded(JumpMatrixFile, jumpMatrixYAML) }

// KernelMatrixFile is the kernel matrix's name in error messages.
const KernelMatrixFile = "kernel.yaml (embedded)"

// KernelMatrix is the embedded matrix of cuts only the kernel network makes
// (matrix/kernel.yaml): every moment x vanish x the dispositions that
// matter there. `sshrig run --net kernel` runs it after the default
// matrix.
func KernelMatrix() []Case { return embedded(KernelMatrixFile, kernelMatrixYAML) }

// transportMatrix is every moment x cut x the dispositions that matter there:
// the rows the default matrix file must contain (checked by a test).
func transportMatrix() []Case {
	return cutMatrix(fault.ConnectionCuts(), true)
}

// cutMatrix is every moment x cuts x the dispositions that matter there,
// with the refuse and no-cut baselines when baselines is set.
func cutMatrix(cuts []fault.Cut, baselines bool) []Case {
	var cases []Case
	add := func(c Case) {
		if c.Operation == "" {
			c.Operation = DefaultOperation
		}
		cases = append(cases, c)
	}
	for _, m := range fault.Moments() {
		switch {
		case m.IsStep():
			continue // step cases come from the tool's conversation (matrix/stepcases.go)
		case !baselines && !m.HasCut():
			continue
		case m == fault.Refuse:
			add(Case{ID: m.String(), Moment: m, Cut: fault.Reset, Disposition: fault.Survive,
				Notes: "nothing accepts the TCP connection"})
			continue
		case m == fault.None:
			for _, code := range []int{0, 3} {
				add(Case{ID: fmt.Sprintf("none.exit%d", code), Moment: m, Cut: fault.Reset, Disposition: fault.Survive, ExitCode: code,
					Notes: "baseline: no cut"})
			}
			continue
		}
		for _, cut := range cuts {
			if m.Knowledge() == fault.ResultReceived {
				for _, code := range []int{0, 3} {
					add(Case{ID: fmt.Sprintf("%s.%s.exit%d", m, cut, code), Moment: m, Cut: cut, Disposition: fault.Survive, ExitCode: code})
				}
				continue
			}
			for _, d := range fault.Dispositions() {
				if d.MattersAt(m) {
					add(Case{ID: fmt.Sprintf("%s.%s.%s", m, cut, d), Moment: m, Cut: cut, Disposition: d})
				}
			}
		}
	}
	return cases
}

// Select returns the cases whose id or alias matches any of the globs (path.Match
// syntax), in matrix order. No globs selects everything. A glob that matches
// nothing is an error: a typo must not silently shrink a run.
func Select(cases []Case, globs []string) ([]Case, error) {
	if len(globs) == 0 {
		return cases, nil
	}
	picked := make([]bool, len(cases))
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("bad --cases pattern %q: %v", g, err)
		}
		hit := false
		for i, c := range cases {
			if match(g, c.ID) || (c.Alias != "" && match(g, c.Alias)) {
				picked[i], hit = true, true
			}
		}
		if !hit {
			return nil, fmt.Errorf("--cases %q matches no case (see 'sshrig cases')", g)
		}
	}
	var out []Case
	for i, c := range cases {
		if picked[i] {
			out = append(out, c)
		}
	}
	return out, nil
}

func match(glob, s string) bool {
	ok, _ := path.Match(glob, s)
	return ok
}

// SplitGlobs splits a comma-separated --cases value.
func SplitGlobs(s string) []string {
	var out []string
	for _, g := range strings.Split(s, ",") {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}

// Applies reports whether case c can run against t, and if not, why.
func Applies(c Case, t tool.Tool) (bool, string) {
	if c.Approval != "" {
		if _, ok := t.(tool.Agent); !ok {
			return false, "approval " + c.Approval + " is the person an agent asks before it changes something; " + t.Name() + " is no agent driving the rig's MCP tools (sshrig agent --agent)"
		}
	}
	if c.Cut.HelperCut() && c.Moment.HasCut() {
		if _, ok := t.(tool.Process); !ok {
			why := " runs inside the rig's own process"
			if _, ok := t.(tool.Answerer); ok {
				// An MCP server killed mid-call is a defect of its own (mcp_server_died), not a lost helper.
				why = " speaks a protocol of its own (MCP), and the rig does not kill its server as a helper"
			}
			verb := map[fault.Cut]string{fault.KillHelper: "kills", fault.WedgeHelper: "stops", fault.ExpireHelper: "ends"}[c.Cut]
			return false, c.Cut.String() + " " + verb + " the local process that owns the tool's socket (e.g. the ssh child of a wrapper); " + t.Name() + why
		}
	}
	return true, ""
}

// MutantCases names a small set of default-matrix cases that together expose
// the defect of every built-in mutant: a cut while the command runs, under a
// reset and a blackhole; a cut at exec with hangup; a cut before the exec
// request; the baselines; a rejected credential, a denied command, a broken
// answer, a changed host key and a step sequence. Tests of every target use it to keep mutant
// runs short.
func MutantCases() []string {
	return []string{"started.reset.survive", "started.blackhole.survive", "exec.reset.hangup", "channel.reset.survive",
		"none.exit0", "none.exit3", "c02.revoked-key", "c03.denied-exec", "c04.id-null", "c08.changed-host-key", "steps.record-note.finished"}
}

// Expected is the honest category and retry for the case.
type Expected struct {
	Category result.Category `json:"category"`
	Retry    result.Retry    `json:"retry"`
}

// Draw is what was drawn for one case run, recorded in its report so the
// case run can be replayed (sshrig replay).
type Draw struct {
	// Round is the case's repetition, from 1.
	Round int `json:"round"`
	// Seed is the case run's own seed: the tool and the perturbation draw
	// from it, so a replay with the same seed draws the same.
	Seed uint64 `json:"seed,string"`
	// Link is the case run's slow-link faults, with their seed.
	Link *Link `json:"link,omitempty"`
	// AnswerDelayMS is how long the server waited before answering each
	// of the case run's channel requests, in milliseconds.
	AnswerDelayMS float64 `json:"answer_delay_ms,omitempty"`
}

// RunName names a case run: the case id, and its round when repeated
// ("started.reset.survive#7"). sshrig replay takes it.
func (c Case) RunName() string {
	if c.Draw == nil {
		return c.ID
	}
	return c.ID + "#" + strconv.Itoa(c.Draw.Round)
}
