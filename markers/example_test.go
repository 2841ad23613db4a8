//go:build unix

package markers_test

import (
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sshrig/sshrig/markers"
)

// Wrap a command, run it with /bin/sh, and read back what the ledger says
// about it.
func Example() {
	dir, err := os.MkdirTemp("", "markers-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ledgerPath := filepath.Join(dir, "ledger")

	script, err := markers.Wrap("case-7", ledgerPath, "echo hello; exit 3")
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // no SSHRIG_GATE: the gates do nothing
	stdout, _ := cmd.Output()                       // the exit status 3 is an error here
	fmt.Printf("stdout: %q, exit code: %d\n", stdout, cmd.ProcessState.ExitCode())

	f, err := os.Open(ledgerPath)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	ledger, err := markers.Parse(f)
	if err != nil {
		log.Fatal(err)
	}
	s := ledger.Summary("case-7")
	fmt.Printf("starts: %d, completes: %d, exit code: %d\n", s.Starts, s.Completes, *s.ExitCode)
	fmt.Println("markers written by the shell we ran:", len(s.PIDs) == 1 && s.PIDs[0] == cmd.Process.Pid)
	// Output:
	// stdout: "hello\n", exit code: 3
	// starts: 1, completes: 1, exit code: 3
	// markers written by the shell we ran: true
}

func ExampleWrap() {
	script, err := markers.Wrap("case-7", "/var/tmp/rig's ledger", "echo hello")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(script)
	// Output:
	// sshrig_id=case-7 sshrig_ledger='/var/tmp/rig'\''s ledger'
	// if [ -n "${SSHRIG_OPERATION_ID:-}" ]; then
	// case $SSHRIG_OPERATION_ID in [!A-Za-z0-9]*|*[!A-Za-z0-9._:-]*|?????????????????????????????????????????????????????????????????????????????????????????????????????????????????????????????????*) false ;; esac || { echo "sshrig: operation id $SSHRIG_OPERATION_ID is not valid (1 to 128 of A-Z a-z 0-9 . _ : -, the first a letter or digit)" >&2; exit 125; }
	// sshrig_claim=$sshrig_ledger.op.$sshrig_id.$SSHRIG_OPERATION_ID; set -C
	// if true 2>/dev/null >"$sshrig_claim"; then set +C
	// elif set +C; [ -f "$sshrig_claim" ]; then printf '%s dedup %s %s op=%s\n' "$sshrig_id" "${EPOCHSECONDS:--}" "$$" "$SSHRIG_OPERATION_ID" >>"$sshrig_ledger" || { echo "sshrig: cannot write dedup marker to $sshrig_ledger" >&2; exit 125; }; echo "sshrig: operation already started: $SSHRIG_OPERATION_ID; the work was not run again" >&2; exit 123
	// else echo "sshrig: cannot claim operation $SSHRIG_OPERATION_ID at $sshrig_claim" >&2; exit 125; fi
	// fi
	// printf '%s start %s %s%s\n' "$sshrig_id" "${EPOCHSECONDS:--}" "$$" "${SSHRIG_OPERATION_ID:+ op=$SSHRIG_OPERATION_ID}" >>"$sshrig_ledger" || { echo "sshrig: cannot write start marker to $sshrig_ledger" >&2; exit 125; }
	// [ ! -p "${SSHRIG_GATE:-}" ] || { printf 'start %s %s\n' "$sshrig_id" "$$" >"$SSHRIG_GATE" && read -r sshrig_go <"$SSHRIG_GATE.go"; }
	// (
	// echo hello
	// )
	// sshrig_rc=$?
	// [ ! -p "${SSHRIG_GATE:-}" ] || { printf 'done %s %s\n' "$sshrig_id" "$$" >"$SSHRIG_GATE" && read -r sshrig_go <"$SSHRIG_GATE.go"; }
	// printf '%s complete %s %s %s\n' "$sshrig_id" "$sshrig_rc" "${EPOCHSECONDS:--}" "$$" >>"$sshrig_ledger"
	// exit "$sshrig_rc"
}

func ExampleUnwrap() {
	script, _ := markers.Wrap("case-7", "/tmp/ledger", "echo hello")
	spec, ok := markers.Unwrap(script)
	fmt.Printf("%v %q %q %q\n", ok, spec.ID, spec.Ledger, spec.Command)
	_, ok = markers.Unwrap("echo hello")
	fmt.Println(ok)
	// Output:
	// true "case-7" "/tmp/ledger" "echo hello"
	// false
}

// A blind retry: the connection was cut after the command started, the
// client ran it again, and the ledger shows two runs, the first of which
// never completed. The last line was torn by a crash.
func ExampleLedger_Summary() {
	ledger := markers.ParseBytes([]byte(
		"case-3 start 1700000000 4100\n" +
			"case-3 start 1700000005 4200\n" +
			"case-3 complete 0 1700000006 4200\n" +
			"case-4 sta"))
	s := ledger.Summary("case-3")
	fmt.Printf("starts: %d, completes: %d, exit code: %d, pids: %v\n", s.Starts, s.Completes, *s.ExitCode, s.PIDs)
	fmt.Println("first start:", s.FirstStart.Format("2006-01-02 15:04:05 MST"))
	for _, m := range ledger.Malformed {
		fmt.Println(m.Error())
	}
	fmt.Println(strings.Join(ledger.IDs(), ","))
	// Output:
	// starts: 2, completes: 1, exit code: 0, pids: [4100 4200]
	// first start: 2023-11-14 22:13:20 UTC
	// ledger line 4: unknown event "sta" (want start, complete or dedup): "case-4 sta"
	// case-3
}
