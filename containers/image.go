package containers

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// ImageRepo is the repository of the images the rig builds; the tag is a
// hash of their content.
const ImageRepo = "sshrig-server"

// DefaultBusybox is where Debian's busybox-static installs busybox.
const DefaultBusybox = "/bin/busybox"

// Image is a prepared server image.
type Image struct {
	Tag  string // ImageRepo:<content hash>
	ID   string
	Base string // "scratch" (with busybox) or the base image's reference
	// Built is true when this preparation built the image, false when an
	// image with the same content was already there and is reused.
	Built     bool
	BuildTime time.Duration // zero when reused
}

// ErrBadImage means the image could not be prepared from what the user
// gave (a binary that is not static, no busybox, a base image that is not
// there or has no /bin/sh). Errors wrapping it say what to do.
var ErrBadImage = errors.New("cannot prepare the server image")

// buildContext is the image's Docker build context.
type buildContext struct {
	dockerfile string
	files      []ctxFile
	baseID     string // the base image's id, part of the content hash
}

type ctxFile struct {
	name string // path in the context
	mode int64  // permission bits (and sticky)
	data []byte // nil for directories and links
	link string // symlink target
	dir  bool
}

// serverBinary is the static sshrig to copy into the image.
func (l *Launcher) serverBinary() (string, staticInfo, error) {
	bin, explicit := l.ServerBinary, true
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", staticInfo{}, fmt.Errorf("%w: cannot find the running executable (%v); pass --server-binary PATH (a static linux build: CGO_ENABLED=0 go build -o sshrig ./cmd/sshrig)", ErrBadImage, err)
		}
		bin, explicit = exe, false
	}
	info, err := checkStatic(bin)
	if err == nil {
		return bin, info, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return "", staticInfo{}, fmt.Errorf("%w: the server binary %s does not exist", ErrBadImage, bin)
	}
	build := "CGO_ENABLED=0 go build -o sshrig ./cmd/sshrig"
	if runtime.GOOS != "linux" {
		build = "GOOS=linux CGO_ENABLED=0 go build -o sshrig-linux ./cmd/sshrig"
	}
	if explicit {
		return "", staticInfo{}, fmt.Errorf("%w: the container image needs a static linux build of sshrig; --server-binary %s is not one (%v). Build one with: %s — and pass its path to --server-binary",
			ErrBadImage, bin, err, build)
	}
	return "", staticInfo{}, fmt.Errorf("%w: the container image needs a static linux build of sshrig; this one (%s) is not (%v). Build one with: %s — then run that binary, or pass --server-binary PATH",
		ErrBadImage, bin, err, build)
}

// busyboxFiles is the FROM scratch image's userland: busybox and a link for
// each of its applets, where `busybox --install -s` would put them.
func (l *Launcher) busyboxFiles() ([]ctxFile, error) {
	bb := l.Busybox
	if bb == "" {
		bb = DefaultBusybox
	}
	const fix = "install Debian's busybox-static (apt-get install busybox-static), or pass --image REF to start from a base image of yours that has /bin/sh"
	if _, err := checkStatic(bb); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: no busybox at %s for the image's /bin/sh: %s", ErrBadImage, bb, fix)
		}
		return nil, fmt.Errorf("%w: the busybox at %s cannot run in a FROM scratch image (%v; Debian's busybox package is dynamically linked): %s", ErrBadImage, bb, err, fix)
	}
	data, err := os.ReadFile(bb)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadImage, err)
	}
	out, err := exec.Command(bb, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s --list-full: %v: %s", ErrBadImage, bb, err, fix)
	}
	files := []ctxFile{{name: "rootfs", mode: 0o755, dir: true}, {name: "rootfs/bin/busybox", mode: 0o755, data: data}}
	dirs := map[string]bool{"rootfs/bin": true}
	for _, p := range strings.Fields(string(out)) {
		p = path.Clean(strings.TrimPrefix(p, "/"))
		if p == "bin/busybox" || strings.HasPrefix(p, "..") {
			continue
		}
		dirs[path.Dir("rootfs/"+p)] = true
		files = append(files, ctxFile{name: "rootfs/" + p, mode: 0o777, link: "/bin/busybox"})
	}
	if !dirs["rootfs/bin"] || !hasFile(files, "rootfs/bin/sh") {
		return nil, fmt.Errorf("%w: %s has no sh applet: %s", ErrBadImage, bb, fix)
	}
	for d := range dirs {
		for ; d != "rootfs" && d != "."; d = path.Dir(d) {
			files = append(files, ctxFile{name: d, mode: 0o755, dir: true})
		}
	}
	// Mount points for the tmpfs mounts (the root file system is read-only).
	files = append(files,
		ctxFile{name: "rootfs/tmp", mode: 0o1777, dir: true},
		ctxFile{name: "rootfs/scratch", mode: 0o1777, dir: true})
	return files, nil
}

func hasFile(files []ctxFile, name string) bool {
	for _, f := range files {
		if f.name == name {
			return true
		}
	}
	return false
}

// context assembles the build context.
func (l *Launcher) context(ctx context.Context, cli *testcontainers.DockerClient, bin string, busybox []ctxFile) (*buildContext, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadImage, err)
	}
	if l.BaseImage == "" {
		files := append(append(busybox, l.scpFiles()...), ctxFile{name: "rootfs/sshrig", mode: 0o755, data: data})
		return &buildContext{
			dockerfile: "# The sshrig container target, built offline by the rig: nothing is pulled.\n" +
				"FROM scratch\nCOPY rootfs/ /\n",
			files: files,
		}, nil
	}
	id, err := l.checkBase(ctx, cli)
	if err != nil {
		return nil, err
	}
	return &buildContext{
		dockerfile: "# The sshrig container target on a base image of the user's, built by the rig.\n" +
			"FROM " + l.BaseImage + "\nCOPY sshrig /sshrig\n",
		files:  []ctxFile{{name: "sshrig", mode: 0o755, data: data}},
		baseID: id,
	}, nil
}

// checkBase checks the --image base is in the local engine and has /bin/sh,
// and returns its id.
func (l *Launcher) checkBase(ctx context.Context, cli *testcontainers.DockerClient) (string, error) {
	ref := l.BaseImage
	img, err := cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("%w: --image %s: no such image in the local Docker engine, and the rig never pulls; load or build it first (docker pull, docker load, docker build)", ErrBadImage, ref)
	}
	if err != nil {
		return "", fmt.Errorf("--image %s: %w", ref, err)
	}
	// A created, never started container shows the image's file system.
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image: img.ID, Entrypoint: []string{"/bin/sh"}, NetworkDisabled: true,
			Labels: map[string]string{LabelRig: "true", LabelRun: l.runID()},
		},
		HostConfig: &container.HostConfig{},
	})
	if err != nil {
		return "", fmt.Errorf("--image %s: cannot look inside: %w", ref, err)
	}
	defer func() {
		rctx, cancel := freshContext(ctx, 30*time.Second)
		defer cancel()
		cli.ContainerRemove(rctx, c.ID, client.ContainerRemoveOptions{Force: true})
	}()
	if _, err := cli.ContainerStatPath(ctx, c.ID, client.ContainerStatPathOptions{Path: "/bin/sh"}); err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", fmt.Errorf("%w: --image %s has no /bin/sh, which runs every command of a case; use an image that has a POSIX shell (and cat) at /bin/sh, or leave --image out for the built-in busybox image", ErrBadImage, ref)
		}
		return "", fmt.Errorf("--image %s: cannot look for /bin/sh: %w", ref, err)
	}
	return img.ID, nil
}

// tar writes the build context as a deterministic tar archive.
func (b *buildContext) tar() []byte {
	files := append([]ctxFile{{name: "Dockerfile", mode: 0o644, data: []byte(b.dockerfile)}}, b.files...)
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f.name] {
			continue
		}
		seen[f.name] = true
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: mtime, Format: tar.FormatPAX}
		switch {
		case f.dir:
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		case f.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		tw.WriteHeader(h)
		tw.Write(f.data)
	}
	tw.Close()
	return buf.Bytes()
}

// hash is the content hash the image is tagged with.
func (b *buildContext) hash(archive []byte) string {
	h := sha256.New()
	io.WriteString(h, "sshrig image v1\n")
	io.WriteString(h, "base "+b.baseID+"\n")
	h.Write(archive) // holds the Dockerfile, busybox and sshrig
	return hex.EncodeToString(h.Sum(nil))[:20]
}

// Prepare builds the server image, or finds it already built: the tag is a
// hash of the content (Dockerfile, busybox, sshrig, and the base image's id
// with --image), so an unchanged binary reuses the image. Launch calls it;
// call it first to report or time the build separately.
func (l *Launcher) Prepare(ctx context.Context) (*Image, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.image != nil {
		img := *l.image
		img.Built, img.BuildTime = false, 0
		return &img, nil
	}
	// What can be checked here first, then the engine.
	bin, info, err := l.serverBinary()
	if err != nil {
		return nil, err
	}
	var busybox []ctxFile
	if l.BaseImage == "" {
		if busybox, err = l.busyboxFiles(); err != nil {
			return nil, err
		}
	}
	cli, err := dockerClient(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	if sys, err := cli.Info(ctx, client.InfoOptions{}); err == nil && sys.Info.Architecture != "" && info.Arch != sys.Info.Architecture {
		return nil, fmt.Errorf("%w: %s is built for %s, but the Docker engine runs %s; build one with: GOOS=linux GOARCH=%s CGO_ENABLED=0 go build -o sshrig-linux ./cmd/sshrig — and pass --server-binary sshrig-linux",
			ErrBadImage, bin, info.Arch, sys.Info.Architecture, goarch(sys.Info.Architecture))
	}
	bc, err := l.context(ctx, cli, bin, busybox)
	if err != nil {
		return nil, err
	}
	archive := bc.tar()
	img := &Image{Tag: ImageRepo + ":" + bc.hash(archive), Base: "scratch"}
	if l.BaseImage != "" {
		img.Base = l.BaseImage
	}
	if got, err := cli.ImageInspect(ctx, img.Tag); err == nil {
		img.ID = got.ID
		l.progressf("sshrig: reusing image %s\n", img.Tag)
	} else if !cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("image %s: %w", img.Tag, err)
	} else {
		l.progressf("sshrig: building image %s (FROM %s, %s); later runs reuse it\n", img.Tag, img.Base, bin)
		start := time.Now()
		if img.ID, err = build(ctx, cli, archive, img.Tag, map[string]string{
			LabelRig: "true", LabelRun: l.runID(), LabelContent: strings.TrimPrefix(img.Tag, ImageRepo+":"),
		}); err != nil {
			return nil, err
		}
		img.Built, img.BuildTime = true, time.Since(start)
		l.progressf("sshrig: image %s built in %.1fs\n", img.Tag, img.BuildTime.Seconds())
	}
	l.image = img
	return img, nil
}

// build sends the context to the engine's builder and waits for the image.
func build(ctx context.Context, cli *testcontainers.DockerClient, archive []byte, tag string, labels map[string]string) (string, error) {
	res, err := cli.ImageBuild(ctx, bytes.NewReader(archive), client.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  "Dockerfile",
		Labels:      labels,
		Remove:      true,
		ForceRemove: true,
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("build image %s: interrupted: %w", tag, context.Cause(ctx))
		}
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	defer res.Body.Close()
	var log strings.Builder
	dec := json.NewDecoder(res.Body)
	for {
		var m struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
			Aux    struct {
				ID string `json:"ID"`
			} `json:"aux"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			if ctx.Err() != nil {
				return "", fmt.Errorf("build image %s: interrupted: %w", tag, context.Cause(ctx))
			}
			return "", fmt.Errorf("build image %s: %w", tag, err)
		}
		log.WriteString(m.Stream)
		if m.Error != "" {
			return "", fmt.Errorf("%w: building %s failed: %s\n%s", ErrBadImage, tag, m.Error, log.String())
		}
	}
	got, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		return "", fmt.Errorf("build image %s: not there after the build: %w\n%s", tag, err, log.String())
	}
	return got.ID, nil
}
