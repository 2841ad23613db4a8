package result_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/sshrig/sshrig/result"
)

// A caller (the rig, an agent, a wrapper script) reads a tool's stdout and
// decides what to do next from the category and the retry instruction,
// never from the message.
func ExampleParse() {
	stdout := []byte(`{"ok": false, "category": "outcome_unknown", "operation": "restart_service",
 "retry": "reconcile_first", "correlation_id": "c-7f3a",
 "message": "connection closed after the remote command started; completion unknown"}` + "\n")

	r, err := result.Parse(stdout)
	if err != nil {
		fmt.Println("malformed result:", err)
		return
	}
	switch r.Category {
	case result.Succeeded:
		fmt.Println("done")
	case result.OutcomeUnknown:
		fmt.Printf("%s %s: %s\n", r.Operation, r.CorrelationID, r.Category.Meaning())
	default:
		fmt.Println("failed:", r.Category)
	}
	switch r.Retry {
	case result.ReconcileFirst:
		fmt.Println("next: inspect the remote host before any retry")
	case result.Never:
		fmt.Println("next: hand over to a person")
	default:
		fmt.Println("next: retry is allowed:", r.Retry.Meaning())
	}
	// Output:
	// restart_service c-7f3a: the caller cannot tell whether the remote side did the work
	// next: inspect the remote host before any retry
}

// Parse names what is wrong and where; errors.Is tells the kind.
func ExampleParse_malformed() {
	_, err := result.Parse([]byte(`{"ok": true, "category": "done", "operation": "deploy", "retry": "never", "correlation_id": "c-1"}`))
	fmt.Println(errors.Is(err, result.ErrUnknownCategory))
	fmt.Println(err)

	_, err = result.Parse([]byte(`{"ok": true, "category": "succeeded", "operation": "deploy", "retry": "never", "correlation_id": "c-1"}
{"ok": true}`))
	fmt.Println(err)
	// Output:
	// true
	// result: unknown category at offset 25: "done" (valid: succeeded, confirmed_failure, outcome_unknown, local_failure, authentication_failed, authorization_denied, rate_limited, malformed_response)
	// result: trailing data after the JSON object at offset 104
}

// A Go tool builds its result and prints it as its only stdout line.
func ExampleResult_Marshal() {
	r := result.Result{
		OK:            false,
		Category:      result.OutcomeUnknown,
		Operation:     "restart_service",
		Retry:         result.ReconcileFirst,
		CorrelationID: "c-7f3a",
		Message:       "connection closed after the remote command started; completion unknown",
	}
	b, err := r.Marshal()
	if err != nil {
		// A result that breaks the contract is a bug in the tool.
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println(string(b))

	// ok must agree with the category; Marshal refuses otherwise.
	r.OK = true
	_, err = r.Marshal()
	fmt.Println(err)
	// Output:
	// {"ok":false,"category":"outcome_unknown","operation":"restart_service","retry":"reconcile_first","correlation_id":"c-7f3a","message":"connection closed after the remote command started; completion unknown"}
	// result: ok contradicts category: ok is true but category is "outcome_unknown" (ok must be false: it is true exactly when category is "succeeded")
}

// A fleet result sums the operation up at the top level; a caller that acts
// per host reads hosts.
func ExampleResult_Host() {
	stdout := []byte(`{"ok": false, "category": "outcome_unknown", "operation": "restart_service",
 "retry": "reconcile_first", "correlation_id": "c-7f3a",
 "hosts": [
  {"host": "127.0.0.1:40022", "ok": true, "category": "succeeded", "retry": "never"},
  {"host": "127.0.0.1:40023", "ok": false, "category": "outcome_unknown", "retry": "reconcile_first"}]}`)

	r, err := result.Parse(stdout)
	if err != nil {
		fmt.Println("malformed result:", err)
		return
	}
	for _, h := range r.Hosts {
		fmt.Printf("%s: %s, then %s\n", h.Host, h.Category, h.Retry)
	}
	if h, ok := r.Host("127.0.0.1:40023"); ok && h.Retry == result.ReconcileFirst {
		fmt.Println("inspect 127.0.0.1:40023 before any retry")
	}

	// Each host appears once.
	_, err = result.Parse([]byte(`{"ok": true, "category": "succeeded", "operation": "deploy", "retry": "never", "correlation_id": "c-1",
 "hosts": [{"host": "a", "ok": true, "category": "succeeded", "retry": "never"},
           {"host": "a", "ok": true, "category": "succeeded", "retry": "never"}]}`))
	var pe *result.ParseError
	if errors.As(err, &pe) {
		fmt.Println(errors.Is(err, result.ErrDuplicateHost), pe.Field)
	}
	// Output:
	// 127.0.0.1:40022: succeeded, then never
	// 127.0.0.1:40023: outcome_unknown, then reconcile_first
	// inspect 127.0.0.1:40023 before any retry
	// true hosts[1].host
}
