package realclients

import (
	"fmt"
	"slices"

	"github.com/sshrig/sshrig/internal/verdict"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/report"
)

// Wrapper is one script of docs/examples.
type Wrapper struct {
	Script string   // path from the repository root
	Needs  []string // programs it runs, looked up on PATH
	// Defect is what a naive wrapper gets wrong ("" for an honest one,
	// which must pass every case of the default matrix).
	Defect string
	// Caught lists, for a naive wrapper, cases of the default matrix and the
	// rule each must fail with; a case with no rule must pass (the defect
	// does not lie there).
	Caught []Case
	// Steps lists, for a naive wrapper, every step case its conversation
	// yields (docs/matrix.md, Step cases: ids as the rig makes them after
	// the preflight), with the rule each must fail with, or "" where the
	// defect does not lie. Empty where the conversation has no request
	// besides its workload's. The tests check that it names each step case
	// the preflight made, no more and no fewer, so a client whose
	// conversation changes is seen.
	Steps []Case
	// Jump: the wrapper reaches its target through a jump host (SSHRIG_JUMP,
	// ssh -J): its cases are the jump matrix's (matrix.JumpMatrix), run
	// with rig.Options.Jump, where the others' are the default matrix's.
	Jump bool
	// Hosts, when 2 or more, runs the wrapper on a fleet of that many
	// hosts (SSHRIG_HOSTS): its cases are the fleet matrix's
	// (matrix.FleetMatrix), run with rig.Options.Hosts.
	Hosts int
	// Skips lists, for an honest wrapper, the cases the rig skips for it
	// (kill-helper, for a library that holds its sockets itself: no helper
	// process to kill); each must be skipped, not judged.
	Skips []string
	// Limits lists, for an honest wrapper, the cases its client gives it no
	// means to get right, with the rule that fails them (docs/real-clients.md
	// says why); every other case must pass.
	Limits []Case
}

// Case is a case id and the rule expected there ("" for a pass).
type Case struct {
	ID   string
	Rule string
}

// Honest says the wrapper must pass the whole default matrix.
func (w Wrapper) Honest() bool { return w.Defect == "" }

// CaseIDs is what the tests run of w, as --cases globs for
// rig.SplitSelection (which sends each to the matrix or to the step cases
// made after the preflight): none for an honest wrapper, which selects every
// case of the default matrix and every step case; for a naive one, the ids
// of its Caught and Steps (a step id that matches no step case of its
// conversation stops the run after the preflight).
func (w Wrapper) CaseIDs() []string {
	var ids []string
	for _, c := range slices.Concat(w.Caught, w.Steps) {
		ids = append(ids, c.ID)
	}
	return ids
}

// Selection is what the tests run of w: its cases (CaseIDs) of the
// default matrix, or of the jump matrix for a wrapper behind a jump host,
// and the step cases to make after the preflight (none behind a jump
// host).
func (w Wrapper) Selection() ([]matrix.Case, matrix.StepSelection, error) {
	all := matrix.DefaultMatrix()
	switch {
	case w.Jump:
		all = matrix.JumpMatrix()
	case w.Hosts > 1:
		all = matrix.FleetMatrix()
	}
	cases, steps, err := matrix.SplitSelection(all, w.CaseIDs())
	if w.Jump || w.Hosts > 1 {
		steps = matrix.StepSelection{}
	}
	return cases, steps, err
}

// reused lists a step that reuses its connection under the helper cuts
// (matrix.ReuseCuts): its master killed, wedged and expired as the session
// asks, or once the workload's request left, each with its rule.
func reused(step, killed, wedged, expired string) []Case {
	return []Case{{step + ".kill-helper", killed}, {step + ".wedge-helper", wedged}, {step + ".expire-helper", expired}}
}

// both lists each step case id with the cuts every step gets
// (rig.StepCuts: reset, blackhole) and the same rule.
func both(step, rule string) []Case {
	return []Case{{step + ".reset", rule}, {step + ".blackhole", rule}}
}

var (
	openssh = []string{"ssh"}
	sftp    = []string{"ssh", "sftp"}
	scp     = []string{"ssh", "scp"}
	plink   = []string{"plink", "puttygen", "ssh-keygen"}
	dbc     = []string{"dbclient", "dropbearconvert"}
	pssh    = []string{"parallel-ssh", "ssh"}
)

// Wrappers lists the real-client wrappers, honest and naive.
func Wrappers() []Wrapper {
	return []Wrapper{
		{Script: "docs/examples/sftp-honest.sh", Needs: sftp},
		{Script: "docs/examples/sftp-naive.sh", Needs: sftp,
			Defect: "ssh's exit status is read as the run's outcome: 255 after a good upload is succeeded (and 137, its timeout killing ssh, the script's failure)",
			Caught: []Case{{"handshake.reset.survive", ""}, {"none.exit3", ""},
				{"exec.reset.hangup", verdict.RuleUnsafeCategory}, {"started.reset.survive", verdict.RuleUnsafeCategory},
				{"finished.close.survive", verdict.RuleUnsafeCategory}},
			// The upload's steps: sftp fails, local_failure. The run's
			// connection (its handshake, its authentication) and its
			// session, cut before its exec left: nothing ran, yet ssh's 255
			// (reset) is "succeeded", its timeout's 137 (blackhole: ssh is
			// killed before its keepalives give up) the script's failure.
			Steps: slices.Concat(both("step.03-subsystem", ""), both("step.04-sftp-stat", ""), both("step.05-sftp-open", ""),
				both("step.06-sftp-write", ""), both("step.07-sftp-close", ""), both("step.upload-64B", ""),
				both("step.08-connection-handshake", verdict.RuleUnsafeCategory), both("step.08-connection-auth", verdict.RuleUnsafeCategory),
				both("step.09-session", verdict.RuleUnsafeCategory))},
		{Script: "docs/examples/sftp-cleanup-naive.sh", Needs: sftp,
			Defect: "a cleanup (ssh rm -f) that fails after the script's exit status arrived makes the operation confirmed_failure",
			Caught: []Case{{"handshake.reset.survive", ""}, {"started.reset.survive", ""},
				{"exit-status.reset.exit0", ""}, {"none.exit3", ""}},
			// Its defect lies only after the workload: the cleanup's session
			// and exec (moment cleanup-step), where the workload's own result
			// is known. Every step before the workload passes.
			Steps: slices.Concat(both("step.03-subsystem", ""), both("step.04-sftp-stat", ""), both("step.05-sftp-open", ""),
				both("step.06-sftp-write", ""), both("step.07-sftp-close", ""), both("step.upload-64B", ""),
				both("step.08-connection-handshake", ""), both("step.08-connection-auth", ""), both("step.09-session", ""),
				both("step.12-session", verdict.RuleUnsafeCategory), both("step.13-exec", verdict.RuleUnsafeCategory))},
		// A fixed remote name, as on a host of the tool's own: two execs
		// (cat > job.sh, then sh job.sh); an sftp upload to job.sh; one to
		// the absolute /tmp/job.sh. Every case has a host of its own
		// (docs/server.md), so cases running at once never share the file.
		{Script: "docs/examples/twoexec-fixed-honest.sh", Needs: openssh},
		{Script: "docs/examples/twoexec-fixed-naive.sh", Needs: openssh,
			Defect: "the second ssh's exit status is the outcome: 255 after job.sh started is \"the job failed\"",
			Caught: []Case{{"handshake.reset.survive", ""}, {"none.exit3", ""},
				{"exec.reset.hangup", verdict.RuleUnsafeCategory}, {"started.reset.survive", verdict.RuleUnsafeCategory},
				{"finished.close.survive", verdict.RuleUnsafeCategory}},
			// The copy (cat > job.sh) fails before anything ran: local_failure.
			// The run's connection (handshake, authentication) and session,
			// cut before its exec left: nothing ran, yet ssh's 255 or
			// timeout's 137 is "the job failed".
			Steps: slices.Concat(both("step.03-exec", ""), both("step.04-connection-handshake", verdict.RuleUnsafeCategory),
				both("step.04-connection-auth", verdict.RuleUnsafeCategory), both("step.05-session", verdict.RuleUnsafeCategory))},
		{Script: "docs/examples/sftp-fixed-honest.sh", Needs: sftp},
		{Script: "docs/examples/sftp-tmp-honest.sh", Needs: sftp},
		{Script: "docs/examples/scp-honest.sh", Needs: scp},
		{Script: "docs/examples/scp-naive.sh", Needs: scp,
			Defect: "ssh's 255 is retried, up to three runs",
			Caught: []Case{{"handshake.reset.survive", ""}, {"none.exit3", ""},
				{"started.reset.survive", verdict.RuleBlindRetry}, {"finished.close.survive", verdict.RuleBlindRetry}},
			// No step shows its defect: the copy's failure is not retried,
			// and the run's connection (handshake, authentication) or session
			// cut before its exec left nothing sent, so the retry is the first
			// attempt (docs/matrix.md) and its result, succeeded, is exact.
			Steps: slices.Concat(both("step.03-subsystem", ""), both("step.04-sftp-stat", ""), both("step.05-sftp-open", ""),
				both("step.06-sftp-write", ""), both("step.07-sftp-setstat", ""), both("step.08-sftp-close", ""),
				both("step.upload-64B", ""), both("step.09-connection-handshake", ""), both("step.09-connection-auth", ""),
				both("step.10-session", ""))},
		{Script: "docs/examples/scp-legacy-honest.sh", Needs: scp},
		{Script: "docs/examples/scp-legacy-naive.sh", Needs: scp,
			Defect: "every non-zero exit of scp or ssh is confirmed_failure",
			Caught: []Case{{"none.exit3", ""},
				{"handshake.reset.survive", verdict.RuleUnsafeCategory}, {"started.reset.survive", verdict.RuleUnsafeCategory}},
			// Every step is before the workload: the copy (scp -t, and the
			// file cut after 64 bytes) and the run's connection and session. Nothing ran,
			// yet scp's 1, ssh's 255 or timeout's 137 is "confirmed_failure".
			Steps: slices.Concat(both("step.03-exec", verdict.RuleUnsafeCategory), both("step.upload-64B", verdict.RuleUnsafeCategory),
				both("step.04-connection-handshake", verdict.RuleUnsafeCategory), both("step.04-connection-auth", verdict.RuleUnsafeCategory),
				both("step.05-session", verdict.RuleUnsafeCategory))},
		{Script: "docs/examples/controlmaster-honest.sh", Needs: openssh},
		{Script: "docs/examples/controlmaster-naive.sh", Needs: openssh,
			Defect: "the multiplexed ssh's 255 is local_failure: \"the master was gone, nothing was sent\"",
			Caught: []Case{{"auth.reset.survive", ""}, {"none.exit3", ""},
				{"started.reset.survive", verdict.RuleUnsafeCategory}, {"started.kill-helper.survive", verdict.RuleContradiction}},
			// Its steps are the probe's exec and the multiplexed session,
			// both before the command left: there "nothing was sent" is
			// true. At the session, reset kills the master and the client
			// connects on its own and runs the command once (succeeded);
			// blackhole holds it until its timeout kills it (local_failure).
			// Once the master sent the command (step.05-exec), a killed,
			// wedged or expired master leaves the client with 255 or its
			// timeout, and "nothing was sent" is false.
			Steps: slices.Concat(both("step.03-exec", ""), both("step.04-session", ""), reused("step.04-session", "", "", ""),
				reused("step.05-exec", verdict.RuleUnsafeCategory, verdict.RuleUnsafeCategory, verdict.RuleUnsafeCategory))},
		// A master kept as long-lived tools keep one (ssh -M -N -f), every
		// command through its socket with no deadline of its own: at the
		// reused session a wedged master makes it hang. A master killed or
		// expired as the session asks is no defect of its: OpenSSH's
		// multiplexed client connects on its own when its master dies before
		// the session opened, and runs the command once. Once the master sent
		// the command, a killed or expired one leaves ssh's 255, which it
		// reads as the host's failure, and a wedged one makes it hang.
		{Script: "docs/examples/controlmaster-reuse-naive.sh", Needs: openssh,
			Defect: "no deadline around the multiplexed ssh (only the master sends keepalives), and ssh's 255 read as confirmed_failure",
			Caught: []Case{{"handshake.reset.survive", ""}, {"none.exit3", ""},
				{"started.reset.survive", verdict.RuleUnsafeCategory}, {"finished.kill-helper.survive", verdict.RuleUnsafeCategory}},
			Steps: slices.Concat(both("step.03-exec", ""), both("step.04-session", ""), reused("step.04-session", "", verdict.RuleHang, ""),
				reused("step.05-exec", verdict.RuleUnsafeCategory, verdict.RuleHang, verdict.RuleUnsafeCategory))},
		// A module-style wrapper on the host: the command's status as
		// {"rc": N} on the last line, exit 1 for any failure (Ansible's
		// modules). The ledger is the workload's truth (docs/tool-contract.md).
		{Script: "docs/examples/module-honest.sh", Needs: openssh},
		{Script: "docs/examples/module-naive.sh", Needs: openssh,
			Defect: "ssh's exit status decides and the module's status line only says which failure: 255 after the command started is \"the module failed\"",
			Caught: []Case{{"none.exit0", ""}, {"none.exit3", ""},
				{"started.reset.survive", verdict.RuleUnsafeCategory}, {"finished.reset.survive", verdict.RuleUnsafeCategory}},
			// The connection, the session and the workload's exec: no step case.
		},
		{Script: "docs/examples/ssh-anykey-naive.sh", Needs: openssh,
			Defect: "host key checking is off (StrictHostKeyChecking=no, UserKnownHostsFile=/dev/null): the command runs on whatever host answers",
			Caught: []Case{{"none.exit3", ""}, {"started.reset.survive", ""},
				{"c08.changed-host-key", verdict.RuleHostKeyIgnored}},
			// ssh-honest.sh's conversation: the connection, the session and
			// the workload's exec, which the moments cut; no step case.
		},
		// Operation ids (docs/tool-contract.md): after a connection lost
		// once the command was sent, the honest one sends it again under
		// the same id, which the remote wrapper runs at most once; the
		// naive one under a fresh id, which it runs again.
		{Script: "docs/examples/ssh-opid-honest.sh", Needs: openssh},
		{Script: "docs/examples/ssh-opid-naive.sh", Needs: openssh,
			Defect: "after a connection lost once the command was sent, it is sent again under a fresh operation id: a new operation, which the remote side runs again",
			// At exec.reset.hangup the first send never ran: the replay
			// runs the work once, and is blind all the same (a new id).
			Caught: []Case{{"handshake.reset.survive", ""}, {"none.exit0", ""},
				{"exec.reset.hangup", verdict.RuleBlindRetry}, {"started.reset.survive", verdict.RuleBlindRetry},
				{"finished.close.survive", verdict.RuleBlindRetry}},
			// ssh-honest.sh's conversation: the connection, the session and
			// the workload's exec, which the moments cut; no step case.
		},
		{Script: "docs/examples/plink-honest.sh", Needs: plink},
		{Script: "docs/examples/plink-naive.sh", Needs: plink,
			Defect: "plink's exit status is taken for the command's",
			Caught: []Case{{"none.exit3", ""},
				{"handshake.reset.survive", verdict.RuleUnsafeCategory}, {"started.reset.survive", verdict.RuleUnsafeCategory}},
			// plink asks simple@putty.projects.tartarus.org on the session
			// before its exec (the server refuses it): cut there, nothing
			// ran, yet plink's 1 (reset) or timeout's 137 (blackhole) is
			// "confirmed_failure".
			Steps: both("step.03-simple-putty-projects-tartarus-org", verdict.RuleUnsafeCategory)},
		// ssh -J: a second ssh (-W) carries the tunnel. Through it a reset
		// of either hop after the exit status reached the jump host can
		// lose that status (the -W process exits before it wrote it out):
		// the honest wrapper then says unknown, which is conservative.
		{Script: "docs/examples/ssh-jump-honest.sh", Needs: openssh, Jump: true},
		{Script: "docs/examples/ssh-jump-naive.sh", Needs: openssh, Jump: true,
			Defect: "ssh's exit status is taken for the outcome, and 255 (\"the bastion dropped\") is retried blindly",
			Caught: []Case{{"jump.first.handshake.reset.survive", ""}, {"jump.second.accept.reset.survive", ""},
				{"jump.target-dead", verdict.RuleUnsafeCategory},
				{"jump.first.started.reset.survive", verdict.RuleBlindRetry}, {"jump.second.started.reset.survive", verdict.RuleBlindRetry},
				{"jump.first.started.blackhole.survive", verdict.RuleUnsafeCategory}, {"jump.second.finished.blackhole.survive", verdict.RuleUnsafeCategory}},
		},
		// asyncssh's tunnel= (Debian's python3-asyncssh): the library
		// holds its sockets itself, so kill-helper has no helper to kill.
		{Script: "docs/examples/asyncssh-jump-honest.py", Needs: []string{"python3-asyncssh"}, Jump: true,
			Skips: []string{"jump.first.started.kill-helper.survive", "jump.first.exit-status.kill-helper.exit0"}},
		// parallel-ssh on a fleet of 5: each host read from its own ssh -v
		// log and parallel-ssh's status line for it.
		{Script: "docs/examples/pssh-honest.sh", Needs: pssh, Hosts: 5},
		{Script: "docs/examples/pssh-batch-naive.sh", Needs: pssh, Hosts: 5,
			Defect: "parallel-ssh's one exit status is taken for every host, and a failed batch is run again on every host",
			// No case where it must pass: even fleet.none.exit0 is a batch
			// that fails whenever one host's ssh misses its timeout on a
			// loaded machine, and is then run again everywhere.
			Caught: []Case{{"fleet.handshake.reset.survive", verdict.RuleBlindRetry},
				{"fleet.started.reset.survive", verdict.RuleBlindRetry}, {"fleet.none.exit3", verdict.RuleBlindRetry}},
		},
		{Script: "docs/examples/dbclient-honest.sh", Needs: dbc,
			// dbclient never says the server refused the exec (it waits)
			// or why it rejected the session (it exits 0).
			Limits: []Case{{"c03.denied-exec", verdict.RuleUnexpected}, {"c07.rate-limited", verdict.RuleUnexpected}}},
		{Script: "docs/examples/dbclient-naive.sh", Needs: dbc,
			Defect: "dbclient's exit status is taken for the command's",
			Caught: []Case{{"none.exit3", ""},
				{"started.reset.survive", verdict.RuleUnsafeCategory}, {"c07.rate-limited", verdict.RuleUnexpected}},
			// No steps: dbclient's conversation is the connection, the
			// session and the workload's exec, which the moments cut
			// (handshake … exit-status); the tests check the preflight
			// makes no step case.
		},
	}
}

// Verdict is one case's verdict as a report gives it.
type Verdict struct {
	ID      string
	Verdict string // "pass", "fail", "inconclusive", "skipped"
	Rules   []string
	Reason  string
}

// VerdictsOf reads a report's cases for Check. A case that did not pass
// carries, in Reason, what a reader of the failure needs: why, what the
// tool reported and how long it took, and whether it was confirmed alone.
func VerdictsOf(cases []report.CaseReport) []Verdict {
	var out []Verdict
	for _, c := range cases {
		v := Verdict{ID: c.ID, Verdict: string(c.Verdict), Reason: c.Reason}
		for _, x := range c.Violations {
			v.Rules = append(v.Rules, x.Rule)
		}
		if c.Verdict == report.Fail || c.Verdict == report.Inconclusive {
			if len(c.Violations) > 0 {
				v.Reason = c.Violations[0].Detail
			}
			if c.Reported != nil {
				v.Reason += fmt.Sprintf(" (reported %s/%s: %q", c.Reported.Category, c.Reported.Retry, c.Reported.Message)
			} else {
				v.Reason += " (no report"
			}
			v.Reason += fmt.Sprintf(", tool %d ms, cut latency %d us", c.ToolMS, c.CutLatencyUS)
			if a := c.ConfirmedAlone; a != nil {
				v.Reason += ", confirmed alone after " + string(a.First.Verdict) + " while " + a.Busy
			}
			v.Reason += ")"
		}
		out = append(out, v)
	}
	return out
}

// Check compares a run of w with what the table says of it: an honest
// wrapper passes every case but its limits (a skipped one is named: nothing
// here may be skipped), which fail by their rule; a naive one fails each
// caught case and step case with its rule and passes the others, and its
// Steps name as many step cases as the preflight made of its conversation
// (stepCases, the report's preflight.step_cases). It returns every problem
// found.
func Check(w Wrapper, stepCases int, got []Verdict) []string {
	var problems []string
	byID := map[string]Verdict{}
	limited := map[string]bool{}
	for _, c := range w.Limits {
		limited[c.ID] = true
	}
	for _, id := range w.Skips {
		limited[id] = true
	}
	for _, v := range got {
		byID[v.ID] = v
		if w.Honest() && !limited[v.ID] && v.Verdict != "pass" {
			problems = append(problems, fmt.Sprintf("%s: %s %v %s; an honest wrapper passes every case", v.ID, v.Verdict, v.Rules, v.Reason))
		}
	}
	if w.Honest() && len(got) == 0 {
		problems = append(problems, "no case ran")
	}
	if !w.Honest() && stepCases != len(w.Steps) {
		problems = append(problems, fmt.Sprintf("its conversation yields %d step cases, the table names %d: every one must say what it gives (--cases 'step.*' runs them)", stepCases, len(w.Steps)))
	}
	for _, id := range w.Skips {
		if v, ok := byID[id]; !ok || v.Verdict != "skipped" {
			problems = append(problems, fmt.Sprintf("%s: %s %s; the rig skips it for this wrapper", id, v.Verdict, v.Reason))
		}
	}
	for _, c := range slices.Concat(w.Caught, w.Steps, w.Limits) {
		v, ok := byID[c.ID]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: did not run", c.ID))
		case c.Rule == "" && v.Verdict != "pass":
			problems = append(problems, fmt.Sprintf("%s: %s %v %s; the defect (%s) does not lie here, it should pass", c.ID, v.Verdict, v.Rules, v.Reason, w.Defect))
		case c.Rule != "" && (v.Verdict != "fail" || !slices.Contains(v.Rules, c.Rule)):
			problems = append(problems, fmt.Sprintf("%s: %s %v %s; want a failure by %s (%s)", c.ID, v.Verdict, v.Rules, v.Reason, c.Rule, w.Defect))
		}
	}
	return problems
}
