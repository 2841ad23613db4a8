package reading

import (
	"strings"
	"testing"

	"github.com/sshrig/sshrig/result"
)

func TestAmbiguities(t *testing.T) {
	local := Answer{result.LocalFailure, result.Bounded}
	unknown := Answer{result.OutcomeUnknown, result.ReconcileFirst}
	failed := Answer{result.ConfirmedFailure, result.Never}
	denied := Answer{result.AuthorizationDenied, result.Never}
	seen := []Seen{
		{"refuse", "exit 255: connection refused", local},
		{"accept.reset", "exit 255: other", local},
		{"started.reset.survive", "exit 255: other", unknown},
		{"exec.reset.survive", "exit 255: other", unknown},
		{"none.exit3", "exit 1-254", failed},
		{"c03.denied-exec", "exit 1-254", denied}, // stop either way: not ambiguous
		{"none.exit0", "exit 0", Answer{result.Succeeded, result.Never}},
		{"unread", "", unknown},
	}
	got := Ambiguities(seen)
	if len(got) != 1 || got[0].Native != "exit 255: other" {
		t.Fatalf("Ambiguities = %+v", got)
	}
	a := got[0]
	if a.CaseCount() != 3 || strings.Join(a.Answers, ",") != "local_failure/bounded,outcome_unknown/reconcile_first" {
		t.Errorf("ambiguity = %+v", a)
	}
	if d := a.Detail(); !strings.Contains(d, `"exit 255: other"`) || !strings.Contains(d, "outcome_unknown/reconcile_first at 2 case(s), e.g. started.reset.survive") {
		t.Errorf("Detail = %s", d)
	}
	if got := Ambiguities([]Seen{{"a", "x", failed}, {"b", "x", unknown}}); len(got) != 1 {
		t.Errorf("confirmed_failure vs outcome_unknown not ambiguous: %+v", got)
	}
}
