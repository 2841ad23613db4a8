//go:build unix

package markers

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkWrapper measures what the wrapper adds to a command, per shell:
// the default workload run bare with SHELL -c, and wrapped (its two markers
// appended to a ledger, the subshell around the command). The difference is
// the wrapper's own cost; the gates do nothing here (no SSHRIG_GATE).
//
//	go test -run '^$' -bench BenchmarkWrapper -benchtime 200x ./markers
func BenchmarkWrapper(b *testing.B) {
	const workload = "printf 'sshrig workload: step one\\n'; printf 'sshrig workload: step two\\n'"
	for _, sh := range testShells {
		path, err := exec.LookPath(sh.argv[0])
		if err != nil {
			continue
		}
		argv := func(script string) []string {
			return append(append([]string{path}, sh.argv[1:]...), "-c", script)
		}
		wrapped, err := Wrap("bench-1", filepath.Join(b.TempDir(), "ledger"), workload)
		if err != nil {
			b.Fatal(err)
		}
		for _, form := range []struct{ name, script string }{{"bare", workload}, {"wrapped", wrapped}} {
			b.Run(sh.name+"/"+form.name, func(b *testing.B) {
				a := argv(form.script)
				for b.Loop() {
					cmd := exec.Command(a[0], a[1:]...)
					cmd.Env = environWithoutGate()
					if err := cmd.Run(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
