package containers

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	gobuild "go/build"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"go.uber.org/goleak"
)

// staticBin is a static linux build of sshrig, made by TestMain: the test
// binary itself is dynamically linked (cgo, -race) and cannot run in a
// FROM scratch image.
var staticBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sshrig-containers-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	staticBin = filepath.Join(dir, "sshrig")
	// docs/containers.md: CGO_ENABLED=0 go build -o sshrig ./cmd/sshrig
	// (run from the module root, with the output in a temporary directory).
	build := exec.Command(goTool(), "build", "-o", staticBin, "./cmd/sshrig")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "CGO_ENABLED=0 go build -o %s ./cmd/sshrig: %v\n%s", staticBin, err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := 0
	func() {
		defer os.RemoveAll(dir)
		// Goroutines of the HTTP transports testcontainers creates per
		// provider linger until their idle connections time out.
		defer func() {
			if err := goleak.Find(goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
				goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop")); err != nil && code == 0 {
				fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
				code = 1
			}
		}()
		code = m.Run()
	}()
	os.Exit(code)
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(gobuild.Default.GOROOT, "bin", "go")
}

var (
	dockerOnce sync.Once
	dockerErr  error
)

// needDocker skips the test when there is no Docker engine (or no static
// busybox for the image), saying why; with SSHRIG_REQUIRE_DOCKER=1 (as
// .ci/run sets) it fails instead.
func needDocker(t testing.TB) {
	t.Helper()
	dockerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cli, err := dockerClient(ctx)
		if err != nil {
			dockerErr = err
			return
		}
		cli.Close()
		if _, err := checkStatic(DefaultBusybox); err != nil {
			dockerErr = fmt.Errorf("no static busybox for the image (apt-get install busybox-static): %w", err)
		}
	})
	if dockerErr == nil {
		return
	}
	if os.Getenv("SSHRIG_REQUIRE_DOCKER") == "1" {
		t.Fatalf("SSHRIG_REQUIRE_DOCKER=1, but: %v", dockerErr)
	}
	t.Skipf("no Docker engine: %v", dockerErr)
}

// newLauncher is a launcher of the static build with a run id of its own.
func newLauncher(t testing.TB) *Launcher {
	b := make([]byte, 4)
	rand.Read(b)
	return &Launcher{ServerBinary: staticBin, RunID: "test-" + hex.EncodeToString(b), Progress: testWriter{t}}
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testClient(t testing.TB) *testcontainers.DockerClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cli, err := dockerClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// rigContainers lists the containers labelled as the rig's (all states),
// narrowed by more labels (e.g. LabelRun+"=id").
func rigContainers(t testing.TB, labels ...string) []string {
	t.Helper()
	cli := testClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: labelFilter(append([]string{LabelRig + "=true"}, labels...)...)})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range list.Items {
		out = append(out, fmt.Sprintf("%s %v %s", short(c.ID), c.Names, c.State))
	}
	return out
}

// cliResult is one run of the static sshrig binary.
type cliResult struct {
	code           int
	stdout, stderr string
}

// sshrig runs the static build with args (env added to the environment).
func sshrig(t testing.TB, env []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, staticBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := cliResult{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	if err != nil && r.code < 0 {
		t.Fatalf("sshrig %v: %v\n%s", args, err, r.stderr)
	}
	t.Logf("sshrig %s: exit %d\nstdout:\n%sstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	return r
}

// started is a running static sshrig whose stderr is read line by line.
type started struct {
	cmd   *exec.Cmd
	lines chan string // stderr, line by line; closed at EOF
	done  chan struct{}
	mu    sync.Mutex
	all   strings.Builder
}

func startSshrig(t testing.TB, args ...string) *started {
	t.Helper()
	cmd := exec.Command(staticBin, args...)
	// A run a test kills cannot remove its temporary directories (keys,
	// scratch): they go with the test's.
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	cmd.Stdout = io.Discard
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &started{cmd: cmd, lines: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.mu.Lock()
			s.all.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			select {
			case s.lines <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			s.wait()
		}
	})
	return s
}

// wait waits for the process and its stderr, and returns the exit code
// (-1 when a signal ended it).
func (s *started) wait() int {
	<-s.done
	s.cmd.Wait()
	return s.cmd.ProcessState.ExitCode()
}

func (s *started) stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all.String()
}

// waitLine waits for a stderr line containing sub and returns it.
func (s *started) waitLine(t testing.TB, sub string) string {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("sshrig ended before printing %q; stderr:\n%s", sub, s.stderr())
			}
			if strings.Contains(l, sub) {
				return l
			}
		case <-timeout:
			t.Fatalf("no %q within 2 minutes; stderr:\n%s", sub, s.stderr())
		}
	}
}
