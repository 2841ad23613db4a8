package tempdir

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOrphans: a directory whose maker is gone is an orphan; one of a
// process that runs (this one), a file, and a name Make does not give are
// not.
func TestOrphans(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	mine, err := Make("keys")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(mine), fmt.Sprintf("sshrig-keys-%d-", os.Getpid())) {
		t.Fatalf("Make named %s", mine)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := gone.Process.Pid
	for _, dir := range []string{
		fmt.Sprintf("sshrig-agent-state-%d-123", dead),
		fmt.Sprintf("sshrig-scratch-%d-456", dead),
		"sshrig-scratch-3496377834", // made before names carried a pid
		fmt.Sprintf("sshrig-run-%d-1", os.Getpid()),
	} {
		if err := os.Mkdir(filepath.Join(tmp, dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, fmt.Sprintf("sshrig-keys-%d-9", dead)), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Orphans("")
	if err != nil {
		t.Fatal(err)
	}
	want := []Orphan{
		{filepath.Join(tmp, fmt.Sprintf("sshrig-agent-state-%d-123", dead)), "agent-state", dead},
		{filepath.Join(tmp, fmt.Sprintf("sshrig-scratch-%d-456", dead)), "scratch", dead},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("orphans %v, want %v", got, want)
	}
}
