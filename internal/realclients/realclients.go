package realclients

import (
	"fmt"
	"slices"

	"github.com/sshrig/sshrig/internal/verdict"
)

// Wrapper is one script of docs/examples.
type Wrapper struct {
	Script string   // path from the repository root
	Needs  []string // programs it runs, looked up on PATH
	// Defect is what a naive wrapper gets wrong ("" for an honest one,
	// which must pass every case of the default matrix).
	Defect string
	// Caught lists, for a naive wrapper, cases and the rule each must fail
	// with; a case with no rule must pass (the defect does not lie there).
	Caught []Case
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

var (
	openssh = []string{"ssh"}
	sftp    = []string{"ssh", "sftp"}
	scp     = []string{"ssh", "scp"}
	plink   = []string{"plink", "puttygen", "ssh-keygen"}
	dbc     = []string{"dbclient", "dropbearconvert"}
)

// Wrappers lists the real-client wrappers, honest and naive.
func Wrappers() []Wrapper {
	return []Wrapper{
		{Script: "docs/examples/sftp-honest.sh", Needs: sftp},
		{Script: "docs/examples/sftp-naive.sh", Needs: sftp,
			Defect: "once the upload succeeded, ssh's 255 is reported as succeeded",
			Caught: []Case{{"handshake.reset.survive", ""}, {"none.exit3", ""},
				{"exec.reset.hangup", verdict.RuleUnsafeCategory}, {"started.reset.survive", verdict.RuleUnsafeCategory},
				{"finished.close.survive", verdict.RuleUnsafeCategory}}},
		{Script: "docs/examples/scp-honest.sh", Needs: scp},
		{Script: "docs/examples/scp-naive.sh", Needs: scp,
			Defect: "ssh's 255 is retried, up to three runs",
			Caught: []Case{{"handshake.reset.survive", ""}, {"none.exit3", ""},
				{"started.reset.survive", verdict.RuleBlindRetry}, {"finished.close.survive", verdict.RuleBlindRetry}}},
		{Script: "docs/examples/scp-legacy-honest.sh", Needs: scp},
		{Script: "docs/examples/scp-legacy-naive.sh", Needs: scp,
			Defect: "every non-zero exit of scp or ssh is confirmed_failure",
			Caught: []Case{{"none.exit3", ""},
				{"handshake.reset.survive", verdict.RuleUnsafeCategory}, {"started.reset.survive", verdict.RuleUnsafeCategory}}},
		{Script: "docs/examples/controlmaster-honest.sh", Needs: openssh},
		{Script: "docs/examples/controlmaster-naive.sh", Needs: openssh,
			Defect: "the multiplexed ssh's 255 is local_failure: \"the master was gone, nothing was sent\"",
			Caught: []Case{{"auth.reset.survive", ""}, {"none.exit3", ""},
				{"started.reset.survive", verdict.RuleUnsafeCategory}, {"started.kill-helper.survive", verdict.RuleContradiction}}},
		{Script: "docs/examples/plink-honest.sh", Needs: plink},
		{Script: "docs/examples/plink-naive.sh", Needs: plink,
			Defect: "plink's exit status is taken for the command's",
			Caught: []Case{{"none.exit3", ""},
				{"handshake.reset.survive", verdict.RuleUnsafeCategory}, {"started.reset.survive", verdict.RuleUnsafeCategory}}},
		{Script: "docs/examples/dbclient-honest.sh", Needs: dbc,
			// dbclient never says the server refused the exec (it waits)
			// or why it rejected the session (it exits 0).
			Limits: []Case{{"c03.denied-exec", verdict.RuleUnexpected}, {"c07.rate-limited", verdict.RuleUnexpected}}},
		{Script: "docs/examples/dbclient-naive.sh", Needs: dbc,
			Defect: "dbclient's exit status is taken for the command's",
			Caught: []Case{{"none.exit3", ""},
				{"started.reset.survive", verdict.RuleUnsafeCategory}, {"c07.rate-limited", verdict.RuleUnexpected}}},
	}
}

// Verdict is one case's verdict as a report gives it.
type Verdict struct {
	ID      string
	Verdict string // "pass", "fail", "inconclusive", "skipped"
	Rules   []string
	Reason  string
}

// Check compares a run of w with what the table says of it: an honest
// wrapper passes every case but its limits (a skipped one is named: nothing
// here may be skipped), which fail by their rule; a naive one fails each
// caught case with its rule and passes the others. It returns every problem
// found.
func Check(w Wrapper, got []Verdict) []string {
	var problems []string
	byID := map[string]Verdict{}
	limited := map[string]bool{}
	for _, c := range w.Limits {
		limited[c.ID] = true
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
	for _, c := range append(w.Caught, w.Limits...) {
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
