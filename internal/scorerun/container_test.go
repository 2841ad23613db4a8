package scorerun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/containers"
	"github.com/sshrig/sshrig/reconcile/score"
)

// containerLauncher prepares the container target with a static build of
// sshrig (this test binary is dynamically linked and cannot run FROM
// scratch). Without Docker or a static busybox it skips, saying why, unless
// SSHRIG_REQUIRE_DOCKER=1, as CI sets, in which case it fails.
func containerLauncher(t *testing.T) *containers.Launcher {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("SSHRIG_REQUIRE_DOCKER") == "1" {
			t.Fatalf("SSHRIG_REQUIRE_DOCKER=1, but: "+format, args...)
		}
		t.Skipf("no container target: "+format, args...)
	}
	if _, err := os.Stat(containers.DefaultBusybox); err != nil {
		unavailable("no static busybox for the image (apt-get install busybox-static): %v", err)
	}
	bin := filepath.Join(t.TempDir(), "sshrig")
	gotool, err := exec.LookPath("go")
	if err != nil {
		unavailable("no go tool to build the server binary: %v", err)
	}
	// docs/containers.md: CGO_ENABLED=0 go build -o sshrig ./cmd/sshrig
	build := exec.Command(gotool, "build", "-o", bin, "./cmd/sshrig")
	build.Dir = filepath.Dir(repoFile(t, "go.mod"))
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build ./cmd/sshrig: %v\n%s", err, out)
	}
	b := make([]byte, 4)
	rand.Read(b)
	l := &containers.Launcher{ServerBinary: bin, RunID: "test-reconcile-" + hex.EncodeToString(b)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := l.Prepare(ctx); err != nil {
		unavailable("%v", err)
	}
	return l
}

// Acceptance 1 on the container target: each example probe scores every
// state correctly there too, run locally (through ssh) and in the container
// (under busybox sh), and the run leaves no container behind.
func TestExamplesOnContainer(t *testing.T) {
	l := containerLauncher(t)
	eachExample(t, func(t *testing.T, o score.Options) {
		o.Target = "container"
		rep := scoreRunOn(t, l, o)
		logReport(t, rep)
		allCorrect(t, rep)
	})
	// Every container the launcher creates carries its run id.
	if _, err := exec.LookPath("docker"); err == nil {
		out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+containers.LabelRun+"="+l.ID()).CombinedOutput()
		if err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("containers of run %s left behind (or docker ps failed: %v): %s", l.ID(), err, out)
		}
	}
}
