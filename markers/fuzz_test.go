package markers

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func FuzzParse(f *testing.F) {
	seeds := []string{
		"",
		"\n",
		"\n\n",
		"a start 1700000000 4242\na complete 0 1700000001 4242\n",
		"a start 1 2\na complete 255 3 2",
		"a start 1 2\r\n",
		" a start 1 2\n",
		"a start  1 2\n",
		"a begin 1 2\n",
		"a complete 300 1 2\n",
		"a complete -1 1 2\n",
		"a complete 01 1 2\n",
		"a start 1 0\n",
		"a start 253402300800 2\n",
		"a start 1 99999999999999999999999999\n",
		"a/b start 1 2\n",
		"-a start 1 2\n",
		"a\x00 start 1 2\n",
		"\xff\xfe complete 1 2 3\n",
		"a start 1 2\n" + strings.Repeat("x", MaxLineLen) + "\n",
		strings.Repeat("x", MaxLineLen+1),
		strings.Repeat("a", 128) + " start 1 2\n" + strings.Repeat("a", 129) + " start 1 2\n",
		"retried start 100 500\nretried start 110 510\nretried complete 3 120 510\n",
		"dash start - 500\ndash complete 0 - 500\na start -- 1\n",
		"once start 100 500 op=op-1\nonce complete 0 101 500\nonce dedup 102 510 op=op-1\n",
		"a start 1 2 op=\na start 1 2 op=x y\na dedup 1 2\na dedup 1 2 op=-x\na complete 0 1 2 op=x\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		ledger := ParseBytes(input)
		checkLedgerInvariants(t, input, ledger)

		// Reading in tiny pieces must not change anything: the long-line
		// handling depends on where reads end.
		oneByte, err := Parse(iotest.OneByteReader(bytes.NewReader(input)))
		if err != nil {
			t.Fatalf("Parse with one-byte reads: %v", err)
		}
		if !reflect.DeepEqual(oneByte, ledger) {
			t.Fatalf("one-byte reads gave %+v, whole reads %+v", oneByte, ledger)
		}
	})
}

// checkLedgerInvariants checks that every line of input is accounted for
// exactly once, that entries say exactly what their lines say, and that the
// summaries add up.
func checkLedgerInvariants(t *testing.T, input []byte, ledger *Ledger) {
	t.Helper()
	var lines []string
	if len(input) > 0 {
		lines = strings.Split(strings.TrimSuffix(string(input), "\n"), "\n")
	}
	if got := len(ledger.Entries) + len(ledger.Malformed); got != len(lines) {
		t.Fatalf("%d entries + %d malformed = %d, input has %d lines", len(ledger.Entries), len(ledger.Malformed), got, len(lines))
	}
	seen := make([]bool, len(lines)+1)
	previous := 0
	for _, e := range ledger.Entries {
		if e.Line <= previous || e.Line > len(lines) || seen[e.Line] {
			t.Fatalf("entry line %d out of order, out of range or repeated", e.Line)
		}
		previous, seen[e.Line] = e.Line, true
		if e.String() != lines[e.Line-1] {
			t.Fatalf("entry %+v formats as %q but line %d is %q", e, e.String(), e.Line, lines[e.Line-1])
		}
		if err := ValidID(e.ID); err != nil {
			t.Fatalf("entry with invalid id: %v", err)
		}
		if e.PID < 1 || e.ExitCode < 0 || e.ExitCode > 255 || (e.Kind != Complete && e.ExitCode != 0) || (!e.Time.IsZero() && (e.Time.Unix() < 0 || e.Time.Location().String() != "UTC")) {
			t.Fatalf("entry out of range: %+v", e)
		}
		// A dedup marker always names its operation, a complete marker never.
		if (e.Kind == Dedup) != (e.OperationID != "" && e.Kind != Start) {
			t.Fatalf("entry with an operation id where its kind takes none, or without one where it must: %+v", e)
		}
		if e.OperationID != "" {
			if err := ValidID(e.OperationID); err != nil {
				t.Fatalf("entry with invalid operation id: %v", err)
			}
		}
	}
	previous = 0
	for _, m := range ledger.Malformed {
		if m.Line <= previous || m.Line > len(lines) || seen[m.Line] {
			t.Fatalf("malformed line %d out of order, out of range or repeated", m.Line)
		}
		previous, seen[m.Line] = m.Line, true
		line := lines[m.Line-1]
		if m.Reason == "" {
			t.Fatalf("malformed line %d without a reason", m.Line)
		}
		if len(line) > MaxLineLen {
			if m.Text != line[:maxQuotedText] {
				t.Fatalf("long line %d: text %q is not its first %d bytes", m.Line, m.Text, maxQuotedText)
			}
		} else if m.Text != line {
			t.Fatalf("malformed line %d: text %q, line %q", m.Line, m.Text, line)
		}
		if msg := m.Error(); len(msg) > 2000 {
			t.Fatalf("error message for line %d is %d bytes long", m.Line, len(msg))
		}
	}

	summaries := ledger.Summaries()
	ids := ledger.IDs()
	if len(ids) != len(summaries) {
		t.Fatalf("%d ids but %d summaries", len(ids), len(summaries))
	}
	starts, completes, dedups := 0, 0, 0
	for _, e := range ledger.Entries {
		switch e.Kind {
		case Start:
			starts++
		case Complete:
			completes++
		case Dedup:
			dedups++
		default:
			t.Fatalf("entry of unknown kind: %+v", e)
		}
	}
	for _, id := range ids {
		s := ledger.Summary(id)
		if !reflect.DeepEqual(s, summaries[id]) {
			t.Fatalf("Summary(%q) and Summaries()[%q] differ", id, id)
		}
		if s.Starts+s.Completes+s.Dedups == 0 || len(s.PIDs) == 0 || (s.Completes > 0) != (s.ExitCode != nil) {
			t.Fatalf("inconsistent summary for an id that appears: %+v", s)
		}
		starts -= s.Starts
		completes -= s.Completes
		dedups -= s.Dedups
	}
	if starts != 0 || completes != 0 || dedups != 0 {
		t.Fatalf("summaries do not add up to the entries (off by %d starts, %d completes, %d dedups)", starts, completes, dedups)
	}
}

func FuzzWrapUnwrap(f *testing.F) {
	f.Add("case-1", "/tmp/ledger", "echo hi", "")
	f.Add("c:2.x_y-z", "/tmp/it's a 'ledger'", "set -e\nfalse\necho no # comment", "op-1")
	f.Add("a", "'", "cat <<'EOF'\n)\nEOF\n", "")
	f.Add("b", `'\''`, "true"+scriptEnd, "x")
	f.Add("b", "l", scriptMiddle+"x", "")
	f.Add("c", "l", "true", "a b")
	f.Add("", "", "", "")
	f.Fuzz(func(t *testing.T, id, ledger, command, op string) {
		script, err := Wrap(id, ledger, command)
		if err != nil {
			return
		}
		if op != "" {
			withOp, err := WithOperationID(script, op)
			if (err == nil) != (ValidID(op) == nil) {
				t.Fatalf("WithOperationID(…, %q) = %v, but ValidID says %v", op, err, ValidID(op))
			}
			if err != nil {
				return
			}
			if spec, ok := Unwrap(withOp); !ok || spec != (Spec{ID: id, Ledger: ledger, Command: command, OperationID: op}) {
				t.Fatalf("Unwrap(WithOperationID(Wrap(%q, %q, %q), %q)) = %+v, %v", id, ledger, command, op, spec, ok)
			}
			return
		}
		spec, ok := Unwrap(script)
		if want := (Spec{ID: id, Ledger: ledger, Command: command}); !ok || spec != want {
			t.Fatalf("Unwrap(Wrap(%q, %q, %q)) = %+v, %v", id, ledger, command, spec, ok)
		}
		if !strings.HasPrefix(script, "sshrig_id="+id+" sshrig_ledger='") || !strings.HasSuffix(script, "exit \"$sshrig_rc\"\n") {
			t.Fatalf("unexpected script shape:\n%s", script)
		}
	})
}

func FuzzUnwrap(f *testing.F) {
	good, _ := Wrap("case-1", "/tmp/it's", "echo hi")
	f.Add(good)
	f.Add("")
	f.Add("echo hi")
	f.Add("sshrig_id=a sshrig_ledger='l'\n")
	f.Add("sshrig_id=a sshrig_ledger=''\\'''\n" + scriptMiddle + "true" + scriptEnd)
	f.Add("sshrig_id=a sshrig_ledger='l'\n" + scriptMiddle[:len(scriptMiddle)-1] + scriptEnd)
	f.Add(strings.TrimSuffix(good, "\n"))
	perHost, _ := WrapPerHost("/tmp/ledger", "echo hi")
	f.Add(perHost)
	withOp, _ := WithOperationID(good, "op-1")
	f.Add(withOp)
	f.Add("SSHRIG_OPERATION_ID=op-1 " + withOp)
	f.Add("SSHRIG_OPERATION_ID= " + good)
	f.Fuzz(func(t *testing.T, script string) {
		spec, ok := Unwrap(script)
		if !ok {
			if spec != (Spec{}) {
				t.Fatalf("Unwrap rejected the script but returned %+v", spec)
			}
			return
		}
		// Whatever Unwrap accepts is exactly what Wrap makes of its parts.
		again, err := Wrap(spec.ID, spec.Ledger, spec.Command)
		if spec.PerHost {
			again, err = WrapPerHost(spec.Ledger, spec.Command)
		}
		if err == nil && spec.OperationID != "" {
			again, err = WithOperationID(again, spec.OperationID)
		}
		if err != nil || again != script {
			t.Fatalf("Unwrap accepted %q as %+v, but Wrap gives %q, %v", script, spec, again, err)
		}
	})
}
