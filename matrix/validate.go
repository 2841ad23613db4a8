package matrix

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/operations"
	"github.com/sshrig/sshrig/markers"
	"github.com/sshrig/sshrig/tool"
)

// CaseError is one problem with one field of a case, whether it was built in
// Go or loaded from a matrix file (which then reports it as a MatrixError
// with the field's line).
type CaseError struct {
	Case  string // the case's id; "" when it has none
	Field string // the field as a matrix file spells it, e.g. "cut"
	Msg   string
}

func (e *CaseError) Error() string {
	return fmt.Sprintf("case %q: %s: %s", e.Case, e.Field, e.Msg)
}

// Validate reports every problem with the case, joined (each a *CaseError):
// a field outside its valid set, or fields that cannot go together. Run
// validates every case before it starts; the matrix loader applies the same
// rules with file positions.
func (c Case) Validate() error {
	problems := append(c.fieldProblems(), c.combinationProblems()...)
	errs := make([]error, len(problems))
	for i, p := range problems {
		errs[i] = p
	}
	return errors.Join(errs...)
}

// WithDefaults fills what a case may leave out: the survive disposition and
// the operation its workload implies.
func (c Case) WithDefaults() Case {
	if c.Disposition == 0 {
		c.Disposition = fault.Survive
	}
	if c.Operation == "" {
		c.Operation = DefaultOperation
		if c.Fixture != "" || c.Scenario != "" {
			c.Operation = operations.CreateRecord
		}
	}
	return c
}

// fieldProblems checks each field on its own, as the matrix loader does
// while it reads them.
func (c Case) fieldProblems() []*CaseError {
	var ps []*CaseError
	add := func(field, format string, args ...any) {
		ps = append(ps, &CaseError{Case: c.ID, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if c.ID == "" {
		add("id", "missing (required)")
	} else if err := markers.ValidID(c.ID); err != nil {
		add("id", "%v", strings.TrimPrefix(err.Error(), "markers: "))
	}
	if c.Alias != "" {
		if err := markers.ValidID(c.Alias); err != nil {
			add("alias", "%v", strings.TrimPrefix(err.Error(), "markers: "))
		}
	}
	if c.Moment == 0 {
		add("moment", "missing (required)")
	} else if _, err := fault.ParseMoment(c.Moment.String()); err != nil {
		add("moment", "%v", err)
	}
	if c.Cut != 0 {
		if _, err := fault.ParseCut(c.Cut.String()); err != nil {
			add("cut", "%v", err)
		}
	}
	if c.Disposition != 0 {
		if _, err := fault.ParseDisposition(c.Disposition.String()); err != nil {
			add("disposition", "%v", err)
		}
	}
	if c.ExitCode < 0 || c.ExitCode > 255 {
		add("exit_code", "%d is out of range 0..255", c.ExitCode)
	}
	if c.Operation != "" && markers.ValidID(c.Operation) != nil {
		add("operation", "operation %q: use letters, digits and . _ : -", c.Operation)
	}
	if c.Command != "" && strings.TrimSpace(c.Command) == "" {
		add("command", "is empty: leave it out for the operation's default workload")
	}
	if c.OutputBytes < 0 || c.OutputBytes > 1<<30 {
		add("output_bytes", "%d is out of range 1..%d", c.OutputBytes, 1<<30)
	}
	if c.Fixture != "" {
		if _, err := operations.ParseFixture(c.Fixture); err != nil {
			add("fixture", "%v", err)
		}
	}
	if c.Scenario != "" && c.Scenario != ScenarioRecordNote {
		add("scenario", "unknown scenario %q (valid: %s)", c.Scenario, ScenarioRecordNote)
	}
	if c.Approval != "" {
		if !slices.Contains(tool.ApprovalModes(), c.Approval) {
			add("approval", "unknown approval %q (valid: %s)", c.Approval, strings.Join(tool.ApprovalModes(), ", "))
		}
		if c.Scenario == "" {
			add("approval", "approvals are asked for in the %s scenario: add scenario: %s", ScenarioRecordNote, ScenarioRecordNote)
		}
	}
	if c.Call != "" {
		switch {
		case !slices.Contains(Calls(), c.Call):
			add("call", "unknown call %q (valid: %s)", c.Call, strings.Join(Calls(), ", "))
		case c.Scenario == "":
			add("call", "calls are made in the %s scenario: add scenario: %s", ScenarioRecordNote, ScenarioRecordNote)
		case c.CutsCall() && !slices.Contains(CallMoments(), c.Moment):
			var ms []string
			for _, m := range CallMoments() {
				ms = append(ms, m.String())
			}
			add("call", "a %s is cut at %s only, not at moment %s", c.Call, strings.Join(ms, ", "), c.Moment)
		}
	}
	if c.ReconcileProbe != "" && strings.TrimSpace(c.ReconcileProbe) == "" {
		add("reconcile_probe", "is empty: give the probe's shell command, or leave the field out")
	}
	if c.Host != "" && c.Host != UnresolvableHost {
		add("host", "unknown host %q (valid: %s): the rig reaches only loopback and its own containers", c.Host, UnresolvableHost)
	}
	if c.Budget < 0 {
		add("budget", "%s is negative", c.Budget)
	}
	return ps
}

// combinationProblems checks the rules that tie fields together. A field
// counts as given when it is not its zero value.
func (c Case) combinationProblems() []*CaseError {
	var ps []*CaseError
	add := func(field, format string, args ...any) {
		ps = append(ps, &CaseError{Case: c.ID, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if c.Moment == 0 {
		return nil
	}
	stall := c.Cut == fault.Stall
	hasCut := c.Cut != 0 && !stall
	switch {
	case !c.Moment.HasCut() && hasCut:
		add("cut", "a cut cannot apply at moment %s: nothing is cut there", c.Moment)
	case c.Moment.HasCut() && c.Cut == 0:
		add("cut", "missing: moment %s needs a cut (valid: %s)", c.Moment, names(fault.Cuts()))
	}
	if hasCut && c.Moment.HasCut() && !c.Cut.FitsMoment(c.Moment) {
		add("cut", "%s cannot be made at moment %s: %s", c.Cut, c.Moment, cutFits(c.Cut))
	}
	if c.Cut.ServerSide() && (c.Hop != 0 || c.Step != nil) {
		add("cut", "%s is the far side's fault on the case's own connection: it takes no hop and no step", c.Cut)
	}
	if c.RebootPause != 0 && c.Cut != fault.Reboot {
		add("reboot_pause", "applies only to cut reboot, not %s", cutOrNone(c.Cut))
	}
	if c.Disposition != 0 && !c.Disposition.AppliesAt(c.Moment) {
		add("disposition", "remote-kill cannot apply at %s: the server kills the command right after its start marker, before that moment", c.Moment)
	}
	if c.OutputBytes != 0 && c.Moment != fault.Output {
		add("output_bytes", "applies only at moment output, not %s", c.Moment)
	}
	if stall && !c.Moment.InCommandWindow() {
		add("stall", "a stall holds the command's answer: it needs a moment from exec to exit-status, not %s", c.Moment)
	}
	if c.Credential != 0 && c.Moment != fault.None {
		add("credential", "a credential scenario fails at authentication: it needs moment none, not %s", c.Moment)
	}
	if c.Refusal != 0 && c.Moment != fault.None {
		add("refusal", "a refusal needs moment none, not %s", c.Moment)
	}
	if c.ChangedHostKey {
		if c.Moment != fault.None {
			add("host_key", "a changed host key stops the tool at the key exchange: it needs moment none, not %s", c.Moment)
		}
		if c.Credential != 0 || c.Refusal != 0 {
			add("host_key", "a changed host key stops the tool before any credential or refusal: leave credential and refusal out")
		}
	}
	if c.Credential != 0 && c.Refusal != 0 {
		add("refusal", "give a credential scenario or a refusal, not both")
	}
	if c.ReconcileProbe != "" && !c.Moment.InCommandWindow() {
		add("reconcile_probe", "a reconcile probe is for an outcome the cut leaves unknown: it needs a moment from exec to exit-status, not %s", c.Moment)
	}
	switch {
	case c.Moment.IsStep() && c.Step == nil:
		add("moment", "%s belongs to step cases, which the rig makes from the tool's conversation after the preflight: select them with --cases 'step.*'", c.Moment)
	case c.Step != nil && !c.Step.Fits(c.Moment):
		add("step", "a step needs moment prep-step or cleanup-step (a connection step: handshake or auth), not %s", c.Moment)
	case c.Step != nil:
		if err := c.Step.Validate(); err != nil {
			add("step", "%v", strings.TrimPrefix(err.Error(), "fault: "))
		}
	}
	if c.Hop != 0 {
		switch {
		case c.Moment == fault.Refuse && c.Hop != fault.JumpTarget:
			add("hop", "a refused connection behind a jump host is the jump host's to the target: it needs hop %s, not %s", fault.JumpTarget, c.Hop)
		case c.Hop == fault.JumpTarget && c.Cut.HelperCut():
			add("hop", "no process of the tool's holds the jump host's connection to the target: kill-helper needs hop %s", fault.ClientJump)
		case c.Hop == fault.JumpTarget && c.Cut.NeedsKernel():
			add("hop", "the jump host's connection to the target is cut by the proxy: %v needs hop %s", c.Cut, fault.ClientJump)
		case c.Credential != 0 || c.Refusal != 0 || c.Host != "" || c.ChangedHostKey || c.Step != nil || c.Scenario != "":
			add("hop", "a case behind a jump host has no credential, refusal, host, host_key, step or scenario of its own")
		}
	}
	if c.Host != "" && c.Moment != fault.Refuse {
		add("host", "an unresolvable host is never reached: it needs moment refuse, not %s", c.Moment)
	}
	if c.Fixture != "" {
		if c.Operation != "" && c.Operation != operations.CreateRecord {
			add("fixture", "fixtures break the contract of operation %s, not %s", operations.CreateRecord, c.Operation)
		}
		if c.Command != "" {
			add("command", "a fixture is the command's answer: give a fixture or a command, not both")
		}
		if c.ExitCode != 0 {
			add("exit_code", "a fixture answers with exit status 0")
		}
	}
	if c.Scenario != "" {
		if c.Operation != "" && c.Operation != operations.CreateRecord {
			add("scenario", "the %s scenario's first step is operation %s, not %s", c.Scenario, operations.CreateRecord, c.Operation)
		}
		given := map[string]bool{"command": c.Command != "", "fixture": c.Fixture != "", "credential": c.Credential != 0,
			"refusal": c.Refusal != 0, "exit_code": c.ExitCode != 0, "host_key": c.ChangedHostKey}
		for _, f := range []string{"command", "fixture", "credential", "refusal", "exit_code", "host_key"} {
			if given[f] {
				add(f, "a scenario defines its own commands and answers: leave %s out", f)
			}
		}
	}
	if c.Command != "" && c.ExitCode != 0 {
		add("exit_code", "exit_code shapes the default workload; with a command of your own, exit from it")
	}
	return ps
}

// cutFits says where cut c can be made.
func cutFits(c fault.Cut) string {
	var at []string
	for _, m := range fault.Moments() {
		if m.HasCut() && c.FitsMoment(m) {
			at = append(at, m.String())
		}
	}
	return "it needs one of " + strings.Join(at, ", ")
}

func cutOrNone(c fault.Cut) string {
	if c == 0 {
		return "no cut"
	}
	return c.String()
}
