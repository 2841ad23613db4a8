package containers

import (
	"context"
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// dynamicBinary is a dynamically linked executable: the test binary itself
// when it is one (always under -race), else /bin/ls.
func dynamicBinary(t *testing.T) string {
	for _, p := range []string{os.Args[0], "/bin/ls", "/usr/bin/env"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		dynamic := false
		for _, prog := range f.Progs {
			dynamic = dynamic || prog.Type == elf.PT_INTERP
		}
		f.Close()
		if dynamic {
			return p
		}
	}
	t.Skip("no dynamically linked executable found")
	return ""
}

func TestStaticCheck(t *testing.T) {
	if _, err := checkStatic(staticBin); err != nil {
		t.Errorf("the CGO_ENABLED=0 build: %v", err)
	}
	dyn := dynamicBinary(t)
	if _, err := checkStatic(dyn); !errors.Is(err, ErrNotStatic) || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("%s: %v, want dynamically linked", dyn, err)
	}
	text := filepath.Join(t.TempDir(), "script")
	os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755)
	if _, err := checkStatic(text); !errors.Is(err, ErrNotStatic) {
		t.Errorf("a script: %v, want ErrNotStatic", err)
	}
}

// A binary that cannot run in a FROM scratch image is rejected before the
// engine is asked anything, with the command that builds one that can.
func TestDynamicServerBinaryRejected(t *testing.T) {
	ctx := context.Background()
	dyn := dynamicBinary(t)
	_, err := (&Launcher{ServerBinary: dyn}).Prepare(ctx)
	for _, want := range []string{"static linux build of sshrig", dyn, "CGO_ENABLED=0 go build -o sshrig ./cmd/sshrig", "--server-binary"} {
		if !errors.Is(err, ErrBadImage) || !strings.Contains(err.Error(), want) {
			t.Errorf("--server-binary %s: %v; want ErrBadImage saying %q", dyn, err, want)
		}
	}
	// The default is the running executable: here the test binary.
	if exe, _ := os.Executable(); exe != "" {
		if _, serr := checkStatic(exe); serr != nil {
			_, err := (&Launcher{}).Prepare(ctx)
			for _, want := range []string{"the container image needs a static linux build of sshrig; this one (" + exe + ")", "Build one with: CGO_ENABLED=0 go build -o sshrig ./cmd/sshrig — then run that binary, or pass --server-binary PATH"} {
				if !errors.Is(err, ErrBadImage) || !strings.Contains(err.Error(), want) {
					t.Errorf("default server binary: %v; want %q", err, want)
				}
			}
		}
	}
	if _, err := (&Launcher{ServerBinary: "/nonexistent/sshrig"}).Prepare(ctx); !errors.Is(err, ErrBadImage) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing binary: %v", err)
	}
}

func TestBusyboxMissingOrDynamic(t *testing.T) {
	ctx := context.Background()
	_, err := (&Launcher{ServerBinary: staticBin, Busybox: "/nonexistent/busybox"}).Prepare(ctx)
	if !errors.Is(err, ErrBadImage) || !strings.Contains(err.Error(), "apt-get install busybox-static") || !strings.Contains(err.Error(), "--image REF") {
		t.Errorf("missing busybox: %v", err)
	}
	dyn := dynamicBinary(t)
	_, err = (&Launcher{ServerBinary: staticBin, Busybox: dyn}).Prepare(ctx)
	if !errors.Is(err, ErrBadImage) || !strings.Contains(err.Error(), "dynamically linked") || !strings.Contains(err.Error(), "busybox-static") {
		t.Errorf("dynamic busybox: %v", err)
	}
}

// The image is built once, then reused: its tag is a hash of its content.
// The first preparation here is cold: the server binary is the static build
// with bytes of this test run's own appended, content no other run has.
// `sshrig gc --images --run ID` then removes that image, and no other.
func TestImageBuiltOnceThenReused(t *testing.T) {
	needDocker(t)
	// A bound, not a wait: hashing and sending the build context takes
	// minutes under -race on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l := newLauncher(t)
	l.ServerBinary = filepath.Join(t.TempDir(), "sshrig")
	b, err := os.ReadFile(staticBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.ServerBinary, append(b, "\nsshrig test run "+l.ID()+"\n"...), 0o755); err != nil {
		t.Fatal(err)
	}
	first, err := l.Prepare(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// docs/containers.md: sshrig gc --images --run ID
		r := sshrig(t, nil, "gc", "--images", "--run", l.ID())
		if want := " " + first.Tag + " run " + l.ID() + "\n"; r.code != 0 || !strings.HasPrefix(r.stdout, "removed image ") || !strings.HasSuffix(r.stdout, want) || strings.Count(r.stdout, "\n") != 1 {
			t.Errorf("gc --images --run %s: exit %d, output %q; want exit 0 and one line, the image %s", l.ID(), r.code, r.stdout, first.Tag)
		}
	})
	if !first.Built || first.BuildTime <= 0 {
		t.Fatalf("first preparation of content never built before: %+v, want built", first)
	}
	t.Logf("cold image build (FROM scratch, busybox, sshrig): %.2fs", first.BuildTime.Seconds())
	cli := testClient(t)
	img, err := cli.ImageInspect(ctx, first.Tag)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{LabelRig: "true", LabelRun: l.ID(), LabelContent: strings.TrimPrefix(first.Tag, ImageRepo+":")} {
		if img.Config == nil || img.Config.Labels[k] != v {
			t.Errorf("image label %s: want %q, labels %v", k, v, img.Config)
		}
	}
	for _, again := range []*Launcher{l, {ServerBinary: l.ServerBinary, RunID: newLauncher(t).ID()}} {
		second, err := again.Prepare(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if second.Built || second.Tag != first.Tag || second.ID != first.ID {
			t.Errorf("second preparation: %+v, want the same image, not built (first %+v)", second, first)
		}
	}
	// Another binary is other content: another tag.
	other := filepath.Join(t.TempDir(), "sshrig")
	os.WriteFile(other, append(b, 0), 0o755)
	bc, err := (&Launcher{ServerBinary: other}).context(ctx, cli, other, mustBusybox(t))
	if err != nil {
		t.Fatal(err)
	}
	if tag := ImageRepo + ":" + bc.hash(bc.tar()); tag == first.Tag {
		t.Errorf("a different binary hashes to the same tag %s", tag)
	}
}

func mustBusybox(t testing.TB) []ctxFile {
	files, err := (&Launcher{}).busyboxFiles()
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// builtTagRE finds the server image a run built, in its progress line.
var builtTagRE = regexp.MustCompile(`building image (\S+) \(FROM`)

// --image REF starts from a local base image of the user's: it must be
// there (nothing is pulled) and have /bin/sh.
func TestBaseImage(t *testing.T) {
	needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := testClient(t)
	labels := map[string]string{LabelRig: "true", LabelRun: "test-base-image"}
	// A base of the user's: busybox, no sshrig, a port of its own
	// (labelled, so gc --images removes it).
	// A file of this test's own makes the base, and so the server image
	// built on it, new: one left by an earlier run would be reused, and
	// the build this test reads would not happen.
	nonce := ctxFile{name: "rootfs/etc/sshrig-test-base", mode: 0o644, data: []byte(t.Name() + " " + time.Now().Format(time.RFC3339Nano) + "\n")}
	withSh := &buildContext{dockerfile: "FROM scratch\nCOPY rootfs/ /\nEXPOSE 8080/tcp\n", files: append(mustBusybox(t), nonce)}
	if _, err := build(ctx, cli, withSh.tar(), "sshrig-test-base:sh", labels); err != nil {
		t.Fatal(err)
	}
	noSh := &buildContext{dockerfile: "FROM scratch\nCOPY hello /hello\n", files: []ctxFile{{name: "hello", mode: 0o644, data: []byte("hi\n")}}}
	if _, err := build(ctx, cli, noSh.tar(), "sshrig-test-base:nosh", labels); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, tag := range []string{"sshrig-test-base:sh", "sshrig-test-base:nosh"} {
			cli.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
		}
	})

	// docs/containers.md: sshrig run --target container --image REF
	r := sshrig(t, nil, "run", "--target", "container", "--server-binary", staticBin, "--image", "sshrig-test-base:sh",
		"--cases", "none.exit0,started.reset.survive,exit-status.reset.exit3", "--out", filepath.Join(t.TempDir(), "run"))
	if r.code != 0 || !strings.Contains(r.stderr, "FROM sshrig-test-base:sh") || !strings.Contains(r.stdout, "3 pass") {
		t.Errorf("--image sshrig-test-base:sh: exit %d", r.code)
	}
	if m := builtTagRE.FindStringSubmatch(r.stderr); m != nil {
		t.Cleanup(func() { cli.ImageRemove(context.Background(), m[1], client.ImageRemoveOptions{Force: true}) })
	}

	// Whatever the base exposes, only the SSH and control ports are published.
	l := newLauncher(t)
	l.BaseImage = "sshrig-test-base:sh"
	ep, err := l.Launch(ctx, []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{Filters: labelFilter(LabelRun + "=" + l.ID())})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("the container: %v", err)
	}
	res, err := cli.ContainerInspect(ctx, list.Items[0].ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkPublished(t, res.Container)
	if err := ep.Stop(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--image", "sshrig-test-base:absent"}, 3, []string{"no such image in the local Docker engine", "never pulls"}},
		{[]string{"--image", "sshrig-test-base:nosh"}, 3, []string{"has no /bin/sh"}},
		{[]string{"--server-binary", "/nonexistent/sshrig"}, 2, []string{"--server-binary", "no such file"}},
		{[]string{"--server-binary", dynamicBinary(t)}, 3, []string{"static linux build of sshrig", "CGO_ENABLED=0 go build -o sshrig ./cmd/sshrig"}},
	} {
		args := append([]string{"run", "--target", "container", "--cases", "none.exit0", "--out", filepath.Join(t.TempDir(), "run")}, tc.args...)
		if tc.args[0] == "--image" {
			args = append(args, "--server-binary", staticBin)
		}
		r := sshrig(t, nil, args...)
		if r.code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, r.code, tc.code)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%v: stderr lacks %q", tc.args, w)
			}
		}
	}
	if left := rigContainers(t, LabelRun+"=test-base-image"); len(left) > 0 {
		t.Errorf("the /bin/sh check left %v", left)
	}
}

// checkPublished: exactly the SSH and control ports are published, on
// 127.0.0.1 only.
func checkPublished(t *testing.T, c container.InspectResponse) {
	t.Helper()
	published := map[string]bool{}
	for port, bindings := range c.NetworkSettings.Ports {
		for _, b := range bindings {
			published[port.String()] = true
			if b.HostIP.String() != "127.0.0.1" {
				t.Errorf("port %s published on %s, want 127.0.0.1 only", port, b.HostIP)
			}
		}
	}
	if len(published) != 2 || !published[SSHPort] || !published[ControlPort] {
		t.Errorf("published ports %v, want exactly %s and %s", published, SSHPort, ControlPort)
	}
	if c.HostConfig.PublishAllPorts {
		t.Error("every exposed port is published")
	}
}
