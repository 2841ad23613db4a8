package verdict

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/secret"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/report"
	"github.com/sshrig/sshrig/result"
)

func TestGradeReport(t *testing.T) {
	exit0 := &Delivered{ExitCode: 0}
	exit3 := &Delivered{ExitCode: 3}
	killed := &Delivered{Signal: "KILL"}
	for _, tc := range []struct {
		k     fault.Knowledge
		d     *Delivered
		cat   result.Category
		retry result.Retry
		want  report.Grade
	}{
		{fault.NothingSent, nil, result.LocalFailure, result.Bounded, report.Exact},
		{fault.NothingSent, nil, result.LocalFailure, result.AfterDelay, report.Exact},
		{fault.NothingSent, nil, result.LocalFailure, result.Never, report.Conservative},
		{fault.NothingSent, nil, result.OutcomeUnknown, result.ReconcileFirst, report.Conservative},
		{fault.NothingSent, nil, result.OutcomeUnknown, result.Bounded, report.Unsafe},
		{fault.NothingSent, nil, result.ConfirmedFailure, result.Never, report.Unsafe},
		{fault.NothingSent, nil, result.Succeeded, result.Never, report.Unsafe},
		{fault.NothingSent, nil, result.AuthenticationFailed, result.Never, report.Unsafe},
		{fault.RequestSent, nil, result.OutcomeUnknown, result.ReconcileFirst, report.Exact},
		{fault.RequestSent, nil, result.OutcomeUnknown, result.Never, report.Conservative},
		{fault.RequestSent, nil, result.OutcomeUnknown, result.Bounded, report.Unsafe},
		{fault.RequestSent, nil, result.OutcomeUnknown, result.AfterDelay, report.Unsafe},
		{fault.RequestSent, nil, result.LocalFailure, result.Bounded, report.Unsafe},
		{fault.RequestSent, nil, result.ConfirmedFailure, result.Never, report.Unsafe},
		{fault.RequestSent, nil, result.Succeeded, result.Never, report.Unsafe},
		{fault.ResultReceived, exit0, result.Succeeded, result.Never, report.Exact},
		{fault.ResultReceived, exit0, result.Succeeded, result.ReconcileFirst, report.Conservative},
		{fault.ResultReceived, exit0, result.Succeeded, result.Bounded, report.Unsafe},
		{fault.ResultReceived, exit0, result.ConfirmedFailure, result.Never, report.Unsafe},
		{fault.ResultReceived, exit0, result.OutcomeUnknown, result.ReconcileFirst, report.Conservative},
		{fault.ResultReceived, exit0, result.LocalFailure, result.Bounded, report.Unsafe},
		{fault.ResultReceived, exit3, result.ConfirmedFailure, result.Never, report.Exact},
		{fault.ResultReceived, exit3, result.ConfirmedFailure, result.Bounded, report.Exact},
		{fault.ResultReceived, exit3, result.ConfirmedFailure, result.ReconcileFirst, report.Conservative},
		{fault.ResultReceived, exit3, result.Succeeded, result.Never, report.Unsafe},
		{fault.ResultReceived, killed, result.ConfirmedFailure, result.Never, report.Exact},
		{fault.ResultReceived, killed, result.Succeeded, result.Never, report.Unsafe},
	} {
		got, why := GradeReport(tc.k, tc.d, nil, tc.cat, tc.retry)
		if got != tc.want {
			t.Errorf("%s, %v: %s/%s graded %s (%s), want %s", tc.k, tc.d, tc.cat, tc.retry, got, why, tc.want)
		}
		if got == report.Unsafe && why == "" {
			t.Errorf("%s/%s: unsafe without a reason", tc.cat, tc.retry)
		}
	}
}

func TestGradeWithExpectation(t *testing.T) {
	want := &Expectation{Category: result.AuthenticationFailed, Retry: result.Never}
	if g, _ := GradeReport(fault.NothingSent, nil, want, result.AuthenticationFailed, result.Never); g != report.Exact {
		t.Errorf("exact expectation graded %s", g)
	}
	if g, _ := GradeReport(fault.NothingSent, nil, want, result.AuthenticationFailed, result.Bounded); g != report.Unsafe {
		t.Errorf("retrying a rejected credential graded %s", g)
	}
	if g, _ := GradeReport(fault.NothingSent, nil, want, result.AuthorizationDenied, result.Never); g != report.Unsafe {
		t.Errorf("denied for rejected graded %s", g)
	}
}

func completed(code int) *reconcile.Truth {
	return &reconcile.Truth{State: reconcile.Completed, ExitCode: &code, Starts: 1, Completes: 1}
}

func resultJSON(cat, retry, id string, ok bool) []byte {
	r := result.Result{OK: ok, Category: result.Category(cat), Retry: result.Retry(retry), Operation: "op", CorrelationID: id, Message: "m"}
	b, err := r.Marshal()
	if err != nil {
		panic(err)
	}
	return b
}

func TestJudge(t *testing.T) {
	good := resultJSON("outcome_unknown", "reconcile_first", "c-1", false)
	base := Input{Moment: fault.Started, CorrelationID: "c-1", Operation: "op", Stdout: good,
		Landed: true, Truth: completed(0), Attempts: 1}
	for _, tc := range []struct {
		name   string
		mod    func(*Input)
		status report.Verdict
		rule   string
	}{
		{"honest", func(*Input) {}, report.Pass, ""},
		{"not landed", func(in *Input) { in.Landed, in.NotLanded = false, "never reached" }, report.Inconclusive, ""},
		{"truth disagrees", func(in *Input) { in.Truth = &reconcile.Truth{State: reconcile.Started, Disagreement: "x"} }, report.Inconclusive, ""},
		{"no truth", func(in *Input) { in.Truth, in.TruthErr = nil, "probe failed" }, report.Inconclusive, ""},
		{"unsafe", func(in *Input) { in.Stdout = resultJSON("confirmed_failure", "never", "c-1", false) }, report.Fail, RuleUnsafeCategory},
		{"malformed", func(in *Input) { in.Stdout = []byte("garbage") }, report.Fail, RuleMalformedResult},
		{"contradicts the server: local_failure", func(in *Input) { in.Stdout = resultJSON("local_failure", "bounded", "c-1", false) }, report.Fail, RuleContradiction},
		{"contradicts the server: confirmed_failure", func(in *Input) { in.Stdout = resultJSON("confirmed_failure", "never", "c-1", false) }, report.Fail, RuleContradiction},
		{"log lacks the result", func(in *Input) { in.Log = &LogRecord{CorrelationID: true} }, report.Fail, RuleLogMissing},
		{"log holds it all", func(in *Input) { in.Log = &LogRecord{CorrelationID: true, Result: true} }, report.Pass, ""},
		{"empty", func(in *Input) { in.Stdout = nil }, report.Fail, RuleMalformedResult},
		{"hang", func(in *Input) { in.Stdout, in.Hung = nil, true }, report.Fail, RuleHang},
		{"blind retry", func(in *Input) { in.Attempts = 2 }, report.Fail, RuleBlindRetry},
		{"probed retry", func(in *Input) { in.Attempts, in.ProbedBetween = 2, true }, report.Pass, ""},
		{"reconciled retry reports its exit status", func(in *Input) {
			in.Attempts, in.ProbedBetween, in.RetryDelivered = 2, true, &Delivered{ExitCode: 0}
			in.Stdout = resultJSON("succeeded", "never", "c-1", true)
		}, report.Pass, ""},
		{"reconciled retry misreports its exit status", func(in *Input) {
			in.Attempts, in.ProbedBetween, in.RetryDelivered = 2, true, &Delivered{ExitCode: 3}
			in.Stdout = resultJSON("succeeded", "never", "c-1", true)
		}, report.Fail, RuleUnsafeCategory},
		{"probed retry that ran the command twice", func(in *Input) {
			in.Attempts, in.ProbedBetween = 2, true
			in.Truth = &reconcile.Truth{State: reconcile.Completed, Starts: 2, Completes: 2, ExitCode: new(0)}
		}, report.Fail, RuleBlindRetry},
		{"resend under its operation id, de-duplicated", func(in *Input) {
			in.Attempts, in.OperationIDs, in.Truth = 2, []string{"op-1", "op-1"}, runs("op-1", "dedup:op-1")
		}, report.Pass, ""},
		{"resend under its operation id on a shell's stdin: the ledger's ids", func(in *Input) {
			in.Attempts, in.Truth = 2, runs("op-1", "dedup:op-1")
		}, report.Pass, ""},
		{"resend under a new operation id that ran the work again", func(in *Input) {
			in.Attempts, in.OperationIDs, in.Truth = 2, []string{"op-1", "op-2"}, runs("op-1", "op-2")
		}, report.Fail, RuleBlindRetry},
		{"resend under a new operation id after a first attempt that never ran", func(in *Input) {
			in.Attempts, in.OperationIDs, in.Truth = 2, []string{"op-1", "op-2"}, runs("op-2")
		}, report.Fail, RuleBlindRetry},
		{"resend without the operation id", func(in *Input) {
			in.Attempts, in.OperationIDs, in.Truth = 2, []string{"op-1", ""}, runs("op-1", "")
		}, report.Fail, RuleBlindRetry},
		{"resend under one operation id that ran the work twice", func(in *Input) {
			in.Attempts, in.OperationIDs, in.Truth = 2, []string{"op-1", "op-1"}, runs("op-1", "op-1")
		}, report.Fail, RuleBlindRetry},
		{"resend under its operation id with the remote state unknown", func(in *Input) {
			in.Attempts, in.OperationIDs, in.Truth, in.TruthErr = 2, []string{"op-1", "op-1"}, nil, "probe failed"
		}, report.Fail, RuleBlindRetry},
		{"resend that ran the work once reports its exit status", func(in *Input) {
			in.Moment, in.Attempts, in.OperationIDs, in.Truth = fault.Exec, 2, []string{"op-1", "op-1"}, runs("op-1")
			in.ResendDelivered, in.Stdout = &Delivered{ExitCode: 0}, resultJSON("succeeded", "never", "c-1", true)
		}, report.Pass, ""},
		{"resend that ran the work once: outcome_unknown is conservative", func(in *Input) {
			in.Moment, in.Attempts, in.OperationIDs, in.Truth = fault.Exec, 2, []string{"op-1", "op-1"}, runs("op-1")
			in.ResendDelivered = &Delivered{ExitCode: 0}
		}, report.Pass, ""},
		{"resend that ran the work once misreports its exit status", func(in *Input) {
			in.Moment, in.Attempts, in.OperationIDs, in.Truth = fault.Exec, 2, []string{"op-1", "op-1"}, runs("op-1")
			in.ResendDelivered, in.Stdout = &Delivered{ExitCode: 3}, resultJSON("succeeded", "never", "c-1", true)
		}, report.Fail, RuleUnsafeCategory},
		{"de-duplicated resend claims success", func(in *Input) {
			in.Attempts, in.OperationIDs, in.Truth = 2, []string{"op-1", "op-1"}, runs("op-1", "dedup:op-1")
			in.Stdout = resultJSON("succeeded", "never", "c-1", true)
		}, report.Fail, RuleUnsafeCategory},
		{"success without a delivered retry", func(in *Input) {
			in.Attempts, in.ProbedBetween = 2, true
			in.Stdout = resultJSON("succeeded", "never", "c-1", true)
		}, report.Fail, RuleUnsafeCategory},
		{"status in the whole output", func(in *Input) {
			in.Moment, in.OutputDelivered = fault.Finished, true
			in.Stdout = resultJSON("succeeded", "never", "c-1", true)
		}, report.Pass, ""},
		{"status in the whole output: a failure", func(in *Input) {
			in.Moment, in.OutputDelivered, in.Truth = fault.Finished, true, completed(3)
			in.Stdout = resultJSON("confirmed_failure", "never", "c-1", false)
		}, report.Pass, ""},
		{"status in the whole output, but not the workload's", func(in *Input) {
			in.Moment, in.OutputDelivered, in.Truth = fault.Finished, true, completed(3)
			in.Stdout = resultJSON("succeeded", "never", "c-1", true)
		}, report.Fail, RuleUnsafeCategory},
		{"success with the output not whole", func(in *Input) {
			in.Moment = fault.Finished
			in.Stdout = resultJSON("succeeded", "never", "c-1", true)
		}, report.Fail, RuleUnsafeCategory},
		{"changed host key: stopped", func(in *Input) {
			in.Moment, in.Expect = fault.None, &Expectation{Category: result.LocalFailure, Retry: result.Never}
			in.Truth, in.Attempts = &reconcile.Truth{State: reconcile.NotStarted}, 0
			in.Stdout = resultJSON("local_failure", "never", "c-1", false)
		}, report.Pass, ""},
		{"changed host key: went on", func(in *Input) {
			in.Moment, in.Expect = fault.None, &Expectation{Category: result.LocalFailure, Retry: result.Never}
			in.HostKeyIgnored = "it authenticated (publickey)"
			in.Stdout = resultJSON("local_failure", "never", "c-1", false)
		}, report.Fail, RuleHostKeyIgnored},
		{"wrong id", func(in *Input) { in.Stdout = resultJSON("outcome_unknown", "reconcile_first", "c-2", false) }, report.Fail, RuleCorrelationID},
		{"secret in stderr", func(in *Input) {
			in.Stderr = []byte("key=SECRET")
			in.Secrets = []secret.Secret{{Name: "private key", Data: []byte("SECRET")}}
		}, report.Fail, RuleSecret},
		{"secret even when not landed", func(in *Input) {
			in.Landed = false
			in.Stdout = resultJSON("outcome_unknown", "reconcile_first", "c-1", false)
			in.Stderr = []byte("SECRET")
			in.Secrets = []secret.Secret{{Name: "private key", Data: []byte("SECRET")}}
		}, report.Fail, RuleSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			tc.mod(&in)
			v := Judge(in)
			if v.Status != tc.status {
				t.Fatalf("status %s (%v, %s), want %s", v.Status, v.Violations, v.Reason, tc.status)
			}
			if tc.rule != "" {
				found := false
				for _, x := range v.Violations {
					found = found || x.Rule == tc.rule
				}
				if !found {
					t.Fatalf("violations %v lack rule %s", v.Violations, tc.rule)
				}
			}
			if v.Status == report.Inconclusive && v.Reason == "" {
				t.Fatal("inconclusive without a reason")
			}
		})
	}
}

// runs is the truth of a command whose runs were given the operation ids
// ops in order: "dedup:ID" a run de-duplicated under ID, "" a run given
// none; every other run started and completed with exit code 0.
func runs(ops ...string) *reconcile.Truth {
	t := &reconcile.Truth{State: reconcile.Completed, ExitCode: new(0)}
	for i, op := range ops {
		x := reconcile.Execution{PID: 100 + i, Server: reconcile.NotStarted}
		if id, ok := strings.CutPrefix(op, "dedup:"); ok {
			x.OperationID, x.Deduplicated = id, true
			t.Dedups++
		} else {
			x.OperationID, x.Ledger, x.LedgerExit, x.Server, x.ServerExit = op, reconcile.Completed, new(0), reconcile.Completed, new(0)
			t.Starts++
			t.Completes++
		}
		t.Executions = append(t.Executions, x)
	}
	return t
}

// TestBlindRetryWords: a blind retry says why the attempts were not one
// de-duplicated operation.
func TestBlindRetryWords(t *testing.T) {
	for _, tc := range []struct {
		wire []string
		runs []string
		want string
	}{
		{[]string{"op-1", "op-2"}, []string{"op-1", "op-2"}, "the attempts carried operation ids op-1, op-2: a new id makes the retry a new operation"},
		{[]string{"op-1", ""}, []string{"op-1", ""}, "an attempt carried no operation id, another op-1"},
		{nil, []string{"", ""}, "no attempt carried an operation id"},
		{[]string{"op-1", "op-1"}, []string{"op-1", "op-1"}, "the work started 2 times under operation id op-1"},
	} {
		v := Judge(Input{Moment: fault.Started, CorrelationID: "c-1", Operation: "op", Landed: true, Attempts: 2,
			OperationIDs: tc.wire, Truth: runs(tc.runs...), Stdout: resultJSON("outcome_unknown", "reconcile_first", "c-1", false)})
		if len(v.Violations) != 1 || v.Violations[0].Rule != RuleBlindRetry || !strings.Contains(v.Violations[0].Detail, tc.want) {
			t.Errorf("wire %q, runs %q: violations %v, want one %s saying %q", tc.wire, tc.runs, v.Violations, RuleBlindRetry, tc.want)
		}
	}
}

// FuzzJudge: Judge never panics, and a pass always means a landed cut, an
// established truth, a parsed result and no violation.
func FuzzJudge(f *testing.F) {
	f.Add(int(fault.Started), []byte(`{"ok":false,"category":"outcome_unknown","operation":"op","retry":"reconcile_first","correlation_id":"c-1"}`), true, true, 1, false, []byte(""), "")
	f.Add(int(fault.None), []byte(`{"ok":true}`), true, false, 2, true, []byte("k"), "")
	f.Add(int(fault.Exec), []byte(`{"ok":true,"category":"succeeded","operation":"op","retry":"never","correlation_id":"c-1"}`), true, true, 2, false, []byte(""), "op-1,dedup:op-1")
	f.Add(int(fault.Started), []byte(`{"ok":false,"category":"outcome_unknown","operation":"op","retry":"reconcile_first","correlation_id":"c-1"}`), true, true, 2, false, []byte(""), "op-1,op-2")
	f.Fuzz(func(t *testing.T, moment int, stdout []byte, landed, truthOK bool, attempts int, hung bool, leak []byte, ops string) {
		in := Input{Moment: fault.Moment(moment), CorrelationID: "c-1", Operation: "op", Stdout: stdout,
			Landed: landed, Attempts: attempts, Hung: hung, Stderr: stdout,
			Secrets: []secret.Secret{{Name: "s", Data: leak}}}
		if truthOK {
			in.Truth = completed(0)
		} else {
			in.TruthErr = "x"
		}
		if ops != "" {
			// The runs the ledger shows, and the ids the wire shows of
			// the attempts that ran the work or were de-duplicated.
			runIDs := strings.Split(ops, ",")
			if truthOK {
				in.Truth = runs(runIDs...)
			}
			for _, op := range runIDs {
				in.OperationIDs = append(in.OperationIDs, strings.TrimPrefix(op, "dedup:"))
			}
			in.ResendDelivered = &Delivered{}
		}
		if fault.Moment(moment).Knowledge() == fault.ResultReceived {
			in.Delivered = &Delivered{}
		}
		v := Judge(in)
		if v.Status == report.Pass && (!landed || !truthOK || v.Reported == nil || len(v.Violations) > 0 || hung) {
			t.Fatalf("pass with landed=%v truth=%v reported=%v violations=%v hung=%v", landed, truthOK, v.Reported, v.Violations, hung)
		}
		if (v.Status == report.Fail) != (len(v.Violations) > 0) {
			t.Fatalf("status %s with %d violations", v.Status, len(v.Violations))
		}
		// A pass after more than one attempt without a probe between them
		// is one operation the remote side ran at most once.
		if same, why := sameOperation(in); v.Status == report.Pass && attempts > 1 && (!same || in.Truth.Starts > 1) {
			t.Fatalf("pass after %d attempts that are not one de-duplicated operation: %s", attempts, why)
		}
	})
}

func TestContradictionWords(t *testing.T) {
	v := Judge(Input{Moment: fault.Started, CorrelationID: "c-1", Operation: "op", Landed: true, Truth: completed(0), Attempts: 1,
		Stdout: resultJSON("local_failure", "bounded", "c-1", false)})
	for _, x := range v.Violations {
		if x.Rule == RuleContradiction && x.Detail == "the server saw the command start; the tool says local_failure (nothing sent)" {
			return
		}
	}
	t.Fatalf("violations %v lack the contradiction in words", v.Violations)
}

// TestHangWords: a hang where the tool never connected and nothing was cut
// says so; one under a landed cut speaks of the dead transport.
func TestHangWords(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		want string
	}{
		{"no connection, no cut", Input{Moment: fault.None, Landed: true, Hung: true, NoConnection: true},
			"the tool made no connection within its budget and nothing was cut"},
		{"no connection, the cut never landed", Input{Moment: fault.Started, Landed: false, NotLanded: "never reached", Hung: true, NoConnection: true},
			"the tool made no connection within its budget and nothing was cut"},
		{"connected, no cut", Input{Moment: fault.None, Landed: true, Hung: true},
			"a hang under a dead transport is a defect"},
		{"no connection, refused", Input{Moment: fault.Refuse, Landed: true, Hung: true, NoConnection: true},
			"a hang under a dead transport is a defect"},
		{"blackhole", Input{Moment: fault.Started, Cut: fault.Blackhole, Landed: true, Hung: true},
			"a hang under a dead transport is a defect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Budget, tc.in.CorrelationID, tc.in.Operation = 5*time.Second, "c-1", "op"
			v := Judge(tc.in)
			for _, x := range v.Violations {
				if x.Rule == RuleHang {
					if !strings.Contains(x.Detail, tc.want) {
						t.Fatalf("hang detail %q lacks %q", x.Detail, tc.want)
					}
					return
				}
			}
			t.Fatalf("no hang among %v", v.Violations)
		})
	}
}

// TestRelayedByHelper: a kill-helper cut at exit-status killed a helper that
// had the status; a ControlMaster passes it to its multiplexed client first.
// Reporting exactly that status passes; another one, or a guess, does not.
func TestRelayedByHelper(t *testing.T) {
	for _, tc := range []struct {
		name      string
		code      int
		cat       string
		ok        bool
		status    report.Verdict
		rule      string
		delivered bool
	}{
		{"the status, relayed", 3, "confirmed_failure", false, report.Pass, "", true},
		{"success, relayed", 0, "succeeded", true, report.Pass, "", true},
		{"unknown, not relayed", 3, "outcome_unknown", false, report.Pass, "", true},
		{"a guess of success", 3, "succeeded", true, report.Fail, RuleUnsafeCategory, true},
		{"nothing delivered", 3, "confirmed_failure", false, report.Fail, RuleUnsafeCategory, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			retry := "never"
			if tc.cat == "outcome_unknown" {
				retry = "reconcile_first"
			}
			in := Input{Moment: fault.ExitStatus, Cut: fault.KillHelper, CorrelationID: "c-1", Operation: "op", Landed: true,
				Truth: completed(tc.code), Attempts: 1, Stdout: resultJSON(tc.cat, retry, "c-1", tc.ok)}
			if tc.delivered {
				in.Delivered = &Delivered{ExitCode: tc.code}
			}
			v := Judge(in)
			if v.Status != tc.status {
				t.Fatalf("status %s, want %s: %v", v.Status, tc.status, v.Violations)
			}
			if tc.rule != "" && (len(v.Violations) == 0 || v.Violations[0].Rule != tc.rule) {
				t.Fatalf("violations %v, want %s first", v.Violations, tc.rule)
			}
		})
	}
}

// TestPartialUploadClaimed: at a step case that cut the tool's upload, a
// report of success fails by its own named rule beside unsafe_category,
// and only while the host holds the partial file; an honest local_failure
// passes.
func TestPartialUploadClaimed(t *testing.T) {
	partial := &report.Upload{Path: "/home/u/job.sh", Arrived: 64, Size: 64, SHA256: "ab"}
	base := Input{Moment: fault.PrepStep, Cut: fault.Reset, CorrelationID: "c-1", Operation: "op", Landed: true,
		Truth: &reconcile.Truth{State: reconcile.NotStarted}, Upload: partial,
		Stdout: resultJSON("succeeded", "never", "c-1", true)}
	for _, tc := range []struct {
		name      string
		mod       func(*Input)
		wantRules []string
	}{
		{"success claimed", func(*Input) {}, []string{RuleUnsafeCategory, RulePartialUpload}},
		{"honest local_failure", func(in *Input) { in.Stdout = resultJSON("local_failure", "bounded", "c-1", false) }, nil},
		{"file removed", func(in *Input) { in.Upload = &report.Upload{Path: partial.Path, Arrived: 64, Absent: "no file there"} }, []string{RuleUnsafeCategory}},
		{"file rewritten", func(in *Input) {
			in.Upload = &report.Upload{Path: partial.Path, Arrived: 64, Size: 4096, SHA256: "cd", Rewritten: true}
		}, []string{RuleUnsafeCategory}},
		{"no upload cut", func(in *Input) { in.Upload = nil }, []string{RuleUnsafeCategory}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			tc.mod(&in)
			v := Judge(in)
			var rules []string
			for _, x := range v.Violations {
				rules = append(rules, x.Rule)
				if x.Rule == RulePartialUpload && (x.Assertion != report.AssertEvidence || !strings.Contains(x.Detail, "64 of its bytes arrived; on the host 64 bytes, sha256 ab")) {
					t.Errorf("%s: %s", x.Rule, x)
				}
			}
			if !slices.Equal(rules, tc.wantRules) {
				t.Errorf("rules %v, want %v (%v)", rules, tc.wantRules, v.Violations)
			}
		})
	}
}
