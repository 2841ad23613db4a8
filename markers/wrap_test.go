package markers

import (
	"strconv"
	"strings"
	"testing"
)

// briefShape is the script shape the rig relies on, copied from the design,
// with ID, LEDGER and COMMAND as placeholders.
const briefShape = `sshrig_id=ID sshrig_ledger='LEDGER'
if [ -n "${SSHRIG_OPERATION_ID:-}" ]; then
case $SSHRIG_OPERATION_ID in [!A-Za-z0-9]*|*[!A-Za-z0-9._:-]*|?????????????????????????????????????????????????????????????????????????????????????????????????????????????????????????????????*) false ;; esac || { echo "sshrig: operation id $SSHRIG_OPERATION_ID is not valid (1 to 128 of A-Z a-z 0-9 . _ : -, the first a letter or digit)" >&2; exit 125; }
sshrig_claim=$sshrig_ledger.op.$sshrig_id.$SSHRIG_OPERATION_ID; set -C
if true 2>/dev/null >"$sshrig_claim"; then set +C
elif set +C; [ -f "$sshrig_claim" ]; then printf '%s dedup %s %s op=%s\n' "$sshrig_id" "${EPOCHSECONDS:--}" "$$" "$SSHRIG_OPERATION_ID" >>"$sshrig_ledger" || { echo "sshrig: cannot write dedup marker to $sshrig_ledger" >&2; exit 125; }; echo "sshrig: operation already started: $SSHRIG_OPERATION_ID; the work was not run again" >&2; exit 123
else echo "sshrig: cannot claim operation $SSHRIG_OPERATION_ID at $sshrig_claim" >&2; exit 125; fi
fi
printf '%s start %s %s%s\n' "$sshrig_id" "${EPOCHSECONDS:--}" "$$" "${SSHRIG_OPERATION_ID:+ op=$SSHRIG_OPERATION_ID}" >>"$sshrig_ledger" || { echo "sshrig: cannot write start marker to $sshrig_ledger" >&2; exit 125; }
[ ! -p "${SSHRIG_GATE:-}" ] || { printf 'start %s %s\n' "$sshrig_id" "$$" >"$SSHRIG_GATE" && read -r sshrig_go <"$SSHRIG_GATE.go"; }
(
COMMAND
)
sshrig_rc=$?
[ ! -p "${SSHRIG_GATE:-}" ] || { printf 'done %s %s\n' "$sshrig_id" "$$" >"$SSHRIG_GATE" && read -r sshrig_go <"$SSHRIG_GATE.go"; }
printf '%s complete %s %s %s\n' "$sshrig_id" "$sshrig_rc" "${EPOCHSECONDS:--}" "$$" >>"$sshrig_ledger"
exit "$sshrig_rc"
`

func TestWrapShape(t *testing.T) {
	tests := []struct {
		name, id, ledger, command string
		wantQuotedLedger          string
	}{
		{name: "plain", id: "case-1", ledger: "/tmp/ledger", command: "echo hi", wantQuotedLedger: "/tmp/ledger"},
		{name: "quote and space in ledger", id: "c:2", ledger: "/tmp/it's a ledger", command: "echo hi", wantQuotedLedger: `/tmp/it'\''s a ledger`},
		{name: "only quotes in ledger", id: "c.3", ledger: "''", command: "true", wantQuotedLedger: `'\'''\''`},
		{name: "shell syntax in ledger stays literal", id: "c_4", ledger: "$(rm -rf /)`x`;\\", command: "true", wantQuotedLedger: "$(rm -rf /)`x`;\\"},
		{name: "multi-line command", id: "c5", ledger: "l", command: "cat <<EOF\nx\nEOF", wantQuotedLedger: "l"},
		{name: "command ending in newline", id: "c6", ledger: "l", command: "true\n", wantQuotedLedger: "l"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Wrap(tt.id, tt.ledger, tt.command)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.NewReplacer("sshrig_id=ID ", "sshrig_id="+tt.id+" ", "LEDGER", tt.wantQuotedLedger, "COMMAND", tt.command).Replace(briefShape)
			if got != want {
				t.Fatalf("Wrap(%q, %q, %q) =\n%s\nwant\n%s", tt.id, tt.ledger, tt.command, got, want)
			}
		})
	}
}

func TestExitNoLedgerMatchesScript(t *testing.T) {
	script, err := Wrap("x", "l", "true")
	if err != nil {
		t.Fatal(err)
	}
	if want := "exit " + strconv.Itoa(ExitNoLedger) + "; }"; !strings.Contains(script, want) {
		t.Fatalf("script does not contain %q:\n%s", want, script)
	}
	if want := `"${` + GateEnv + `:-}"`; strings.Count(script, want) != 2 {
		t.Fatalf("script does not test %s twice:\n%s", GateEnv, script)
	}
	if want := "exit " + strconv.Itoa(ExitDeduplicated) + "\n"; !strings.Contains(script, want) {
		t.Fatalf("script does not contain %q:\n%s", want, script)
	}
	if want := `echo "` + DedupNotice + `$` + OperationIDEnv + `;`; !strings.Contains(script, want) {
		t.Fatalf("script does not contain %q:\n%s", want, script)
	}
	if want := strconv.Itoa(MaxIDLen) + " of A-Z"; !strings.Contains(script, want) || !strings.Contains(script, "|"+strings.Repeat("?", MaxIDLen+1)+"*)") || strings.Contains(script, "{#") {
		t.Fatalf("script does not limit operation ids to %d characters:\n%s", MaxIDLen, script)
	}
}

func TestWrapRejects(t *testing.T) {
	tests := []struct {
		name, id, ledger, command string
		wantErr                   string
	}{
		{name: "invalid id", id: "a b", ledger: "l", command: "true", wantErr: `markers: id "a b": character ' ' at 1`},
		{name: "empty id", id: "", ledger: "l", command: "true", wantErr: `markers: id "": empty`},
		{name: "empty ledger", id: "a", ledger: "", command: "true", wantErr: "markers: empty ledger path"},
		{name: "newline in ledger", id: "a", ledger: "l\nx", command: "true", wantErr: `ledger path "l\nx" contains a newline or NUL byte`},
		{name: "NUL in ledger", id: "a", ledger: "l\x00", command: "true", wantErr: `ledger path "l\x00" contains a newline or NUL byte`},
		{name: "NUL in command", id: "a", ledger: "l", command: "echo \x00", wantErr: "contains a NUL byte"},
		{name: "empty command", id: "a", ledger: "l", command: "", wantErr: "has nothing to run"},
		{name: "blank command", id: "a", ledger: "l", command: " \t\n\n  ", wantErr: "has nothing to run"},
		{name: "comment-only command", id: "a", ledger: "l", command: "# just a note\n  # another ) (\n", wantErr: "has nothing to run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script, err := Wrap(tt.id, tt.ledger, tt.command)
			if err == nil {
				t.Fatalf("Wrap(%q, %q, %q) succeeded:\n%s", tt.id, tt.ledger, tt.command, script)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Wrap error = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestWrapAcceptsCommandsWithSomethingToRun(t *testing.T) {
	for _, command := range []string{"true", "# note\ntrue", "  :", "\r", "echo a # b", "\n\ntrue\n\n"} {
		if _, err := Wrap("a", "l", command); err != nil {
			t.Errorf("Wrap(command %q) = %v, want success", command, err)
		}
	}
}

func TestUnwrapRoundTrip(t *testing.T) {
	specs := []Spec{
		{ID: "a", Ledger: "l", Command: "true"},
		{ID: "case-16.retry:2", Ledger: "/tmp/it's a 'ledger'", Command: "echo 'x'\nexit 3 # bye"},
		{ID: "b", Ledger: "'", Command: "true\n)\nsshrig_rc=$?\n"},
		// A command that contains the whole end of a wrapped script.
		{ID: "c", Ledger: " ", Command: "true" + scriptEnd + "echo more"},
		{ID: "d", Ledger: `'\''`, Command: scriptMiddle + "true"},
		{PerHost: true, Ledger: "/tmp/l", Command: "echo 'x'"},
		{ID: "e", Ledger: "l", Command: "true", OperationID: "op-7f3a.1:x_y"},
		{PerHost: true, Ledger: "l", Command: "true", OperationID: "o"},
		// A command that sets an operation id of its own is just a command.
		{ID: "f", Ledger: "l", Command: OperationIDEnv + "=x true"},
	}
	for _, spec := range specs {
		script, err := Wrap(spec.ID, spec.Ledger, spec.Command)
		if spec.PerHost {
			script, err = WrapPerHost(spec.Ledger, spec.Command)
		}
		if err == nil && spec.OperationID != "" {
			script, err = WithOperationID(script, spec.OperationID)
		}
		if err != nil {
			t.Fatal(err)
		}
		got, ok := Unwrap(script)
		if !ok || got != spec {
			t.Errorf("Unwrap(Wrap(%+v)) = %+v, %v", spec, got, ok)
		}
	}
}

func TestUnwrapRejects(t *testing.T) {
	good, err := Wrap("case-1", "/tmp/it's", "echo hi")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, script string
	}{
		{name: "empty", script: ""},
		{name: "plain command", script: "echo hi"},
		{name: "missing final newline", script: strings.TrimSuffix(good, "\n")},
		{name: "extra final newline", script: good + "\n"},
		{name: "CRLF", script: strings.ReplaceAll(good, "\n", "\r\n")},
		{name: "extra space in first line", script: strings.Replace(good, " sshrig_ledger", "  sshrig_ledger", 1)},
		{name: "invalid id", script: strings.Replace(good, "sshrig_id=case-1", "sshrig_id=case$1", 1)},
		{name: "empty id", script: strings.Replace(good, "sshrig_id=case-1", "sshrig_id=", 1)},
		{name: "unquoted ledger", script: strings.Replace(good, `'/tmp/it'\''s'`, `/tmp/x`, 1)},
		{name: "stray quote in ledger", script: strings.Replace(good, `'/tmp/it'\''s'`, `'/tmp/it's'`, 1)},
		{name: "double-quoted ledger", script: strings.Replace(good, `'/tmp/it'\''s'`, `"/tmp/x"`, 1)},
		{name: "empty ledger", script: strings.Replace(good, `'/tmp/it'\''s'`, `''`, 1)},
		{name: "gate removed", script: strings.Replace(good, `[ ! -p "${SSHRIG_GATE:-}" ] || { printf 'start %s %s\n' "$sshrig_id" "$$" >"$SSHRIG_GATE" && read -r sshrig_go <"$SSHRIG_GATE.go"; }`+"\n", "", 1)},
		{name: "different exit code", script: strings.Replace(good, "exit 125", "exit 1", 1)},
		{name: "empty command", script: strings.Replace(good, "echo hi", "", 1)},
		{name: "NUL in command", script: strings.Replace(good, "echo hi", "echo \x00", 1)},
		{name: "prefix and suffix overlap", script: "sshrig_id=a sshrig_ledger='l'\n" + scriptMiddle[:len(scriptMiddle)-1] + scriptEnd},
		{name: "truncated", script: good[:len(good)/2]},
		{name: "operation id without a script", script: "SSHRIG_OPERATION_ID=op-1"},
		{name: "operation id in front of a plain command", script: "SSHRIG_OPERATION_ID=op-1 echo hi"},
		{name: "empty operation id", script: "SSHRIG_OPERATION_ID= " + good},
		{name: "quoted operation id", script: "SSHRIG_OPERATION_ID='op-1' " + good},
		{name: "operation id with a dollar", script: "SSHRIG_OPERATION_ID=op$1 " + good},
		{name: "two spaces after the operation id", script: "SSHRIG_OPERATION_ID=op-1  " + good},
		{name: "two operation ids", script: "SSHRIG_OPERATION_ID=a SSHRIG_OPERATION_ID=b " + good},
		{name: "operation id on a line of its own", script: "SSHRIG_OPERATION_ID=op-1\n" + good},
		{name: "operation id after the marker id", script: strings.Replace(good, "sshrig_id=case-1 ", "sshrig_id=case-1 SSHRIG_OPERATION_ID=op-1 ", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if spec, ok := Unwrap(tt.script); ok {
				t.Fatalf("Unwrap accepted %q as %+v", tt.script, spec)
			}
		})
	}
}

func TestWithOperationIDRejects(t *testing.T) {
	good, err := Wrap("case-1", "l", "true")
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"", "a b", "-a", "a'b", "a\nb", strings.Repeat("o", MaxIDLen+1)} {
		if script, err := WithOperationID(good, op); err == nil || !strings.HasPrefix(err.Error(), "markers: operation id ") {
			t.Errorf("WithOperationID(%q) = %q, %v; want an error about the operation id", op, script, err)
		}
	}
}
