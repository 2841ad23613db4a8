package procs

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

func TestGroupAndChildren(t *testing.T) {
	// A child in a process group of its own, with a name that has a space
	// and a parenthesis, as /proc/PID/stat quotes it.
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1)")
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	odd := filepath.Join(t.TempDir(), "odd) name")
	if err := os.WriteFile(odd, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(odd, "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	if got := Group(pid); !slices.Equal(got, []int{pid}) {
		t.Errorf("Group(%d) = %v, want [%d]", pid, got, pid)
	}
	if got := Children(os.Getpid()); !slices.Contains(got, pid) {
		t.Errorf("Children(self) = %v, want it to hold %d", got, pid)
	}
	if got := Named("odd) name 60"); !slices.Equal(got, []int{pid}) {
		t.Errorf("Named = %v, want [%d]", got, pid)
	}
	if got := Group(os.Getpid()); slices.Contains(got, pid) {
		t.Errorf("the child's own group leaked into ours: %v", got)
	}

	cmd.Process.Kill()
	cmd.Wait()
	if got := Group(pid); len(got) != 0 {
		t.Errorf("Group(%d) after the child ended = %v, want none", pid, got)
	}
	if got := Named("odd) name 60"); len(got) != 0 {
		t.Errorf("Named after the child ended = %v, want none", got)
	}
}
