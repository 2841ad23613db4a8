package testpeer

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestLookupSaysWhatToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, p := range Programs() {
		if pythonModule(p) != "" {
			continue // imported by Debian's /usr/bin/python3, whatever PATH says
		}
		_, err := Lookup(p)
		if err == nil || !strings.Contains(err.Error(), "apt-get install -y "+Package(p)) {
			t.Errorf("%s with an empty PATH: %v, want the Debian package %s named", p, err, Package(p))
		}
	}
	if _, err := Lookup("no-such-program"); err == nil || strings.Contains(err.Error(), "apt-get") {
		t.Errorf("unknown program: %v", err)
	}
}

// recorder is a testing.TB that records how a test ended.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skip(args ...any)                  { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestMissingSkipsOrFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(RequireEnv, "")
	r := &recorder{TB: t}
	Need(r, "puttygen")
	if !strings.Contains(r.skipped, "putty-tools") || r.failed != "" {
		t.Errorf("without %s: skipped %q, failed %q; want a skip naming putty-tools", RequireEnv, r.skipped, r.failed)
	}
	t.Setenv(RequireEnv, "1")
	r = &recorder{TB: t}
	Need(r, "dbclient")
	if !strings.Contains(r.failed, "dropbear-bin") || r.skipped != "" {
		t.Errorf("with %s=1: skipped %q, failed %q; want a failure naming dropbear-bin", RequireEnv, r.skipped, r.failed)
	}
}

// TestCIInstallsEveryPeer: .ci/run installs every package of the table and
// makes a missing program fail the tests.
func TestCIInstallsEveryPeer(t *testing.T) {
	b, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	ci := string(b)
	if !strings.Contains(ci, "\nexport "+RequireEnv+"=1\n") {
		t.Errorf(".ci/run does not export %s=1", RequireEnv)
	}
	loop := regexp.MustCompile(`(?m)^for pkg in (.*); do$`).FindStringSubmatch(ci)
	if loop == nil {
		t.Fatal(".ci/run has no 'for pkg in …; do' line")
	}
	for _, p := range Programs() {
		if !slices.Contains(strings.Fields(loop[1]), Package(p)) {
			t.Errorf(".ci/run does not install %s (for %s)", Package(p), p)
		}
	}
}
