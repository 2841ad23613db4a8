package containertest_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/containers"
	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/reconcile"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/sshrigtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}

// launcher prepares the container target with a static build of sshrig
// (this test binary is dynamically linked and cannot run FROM scratch).
// Without Docker or a static busybox it skips, saying why, unless
// SSHRIG_REQUIRE_DOCKER=1, as CI sets, in which case it fails.
func launcher(t *testing.T) *containers.Launcher {
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
	gotool, err := exec.LookPath("go")
	if err != nil {
		unavailable("no go tool to build the server binary: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "sshrig")
	// docs/containers.md: CGO_ENABLED=0 go build -o sshrig ./cmd/sshrig
	build := exec.Command(gotool, "build", "-o", bin, "./cmd/sshrig")
	build.Dir = "../../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build ./cmd/sshrig: %v\n%s", err, out)
	}
	b := make([]byte, 4)
	rand.Read(b)
	l := &containers.Launcher{ServerBinary: bin, RunID: "test-sshrigtest-" + hex.EncodeToString(b)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := l.Prepare(ctx); err != nil {
		unavailable("%v", err)
	}
	return l
}

// runCommand runs cmd once over a plain x/crypto/ssh client; every read and
// write ends by deadline.
func runCommand(srv *sshrigtest.Server, cmd string) error {
	conn, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	c, chans, reqs, err := ssh.NewClientConn(conn, srv.Addr(), srv.ClientConfig())
	if err != nil {
		return err
	}
	client := ssh.NewClient(c, chans, reqs)
	defer client.Close()
	sess, err := client.NewSession()
	if err != nil {
		return err
	}
	defer sess.Close()
	return sess.Run(cmd)
}

// The held server in a container: the same cuts land and the same truths
// come back as on the embedded target, and once the server is closed no
// container of its launcher is left.
func TestHeldServerInContainer(t *testing.T) {
	l := launcher(t)
	t.Run("operations", func(t *testing.T) {
		srv := sshrigtest.NewServer(t, sshrigtest.InContainer(l))
		started := srv.Arm(fault.Started, fault.Reset, sshrigtest.Disposition(fault.Hangup))
		if err := runCommand(srv, started.Command()); err == nil {
			t.Error("started.reset.hangup: the command ran to its end through the cut")
		}
		if truth := started.Truth(); truth.State != reconcile.Started || !truth.Landed {
			t.Errorf("started.reset.hangup: truth %s, want started", truth)
		}
		j := started.Judge(result.Result{Category: result.OutcomeUnknown, Retry: result.ReconcileFirst,
			CorrelationID: started.ID(), Operation: started.Operation()})
		if j.Verdict != sshrigtest.Pass {
			t.Errorf("an honest report:\n%s", j)
		}

		exited := srv.Arm(fault.ExitStatus, fault.Close, sshrigtest.ExitCode(3))
		var exitErr *ssh.ExitError
		if err := runCommand(srv, exited.Command()); !errors.As(err, &exitErr) || exitErr.ExitStatus() != 3 {
			t.Errorf("exit-status.close.exit3: the client got %v, want exit status 3", err)
		}
		if truth := exited.Truth(); truth.State != reconcile.Completed || truth.ExitCode == nil || *truth.ExitCode != 3 {
			t.Errorf("exit-status.close.exit3: truth %s, want completed with exit 3", truth)
		}
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+containers.LabelRun+"="+l.ID()).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("containers of run %s left behind (or docker ps failed: %v): %s", l.ID(), err, out)
	}
}
