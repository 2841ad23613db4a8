package containers

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/sshrig/sshrig/internal/server"
	"github.com/sshrig/sshrig/target"
)

// Ports the server listens on inside the container. They are published on
// 127.0.0.1 only, on ports the engine picks.
const (
	SSHPort     = "2222/tcp"
	ControlPort = "2223/tcp"
)

// Inside the container.
const (
	serverPath = "/sshrig"
	scratchDir = "/scratch"
	// User runs the server: nobody. Nothing it does needs root.
	User = "65534:65534"
)

// Defaults for Launcher.
const (
	DefaultStartTimeout = 60 * time.Second
	DefaultStopTimeout  = 2 * time.Second
	logLines            = 40
)

// Launcher runs the server in a disposable container: the container target.
// Use it by pointer; one Launcher can launch several servers, and prepares
// the image once.
type Launcher struct {
	// ServerBinary is a static linux build of sshrig, copied into the image.
	// Default: the running executable, which must then be static.
	ServerBinary string
	// Busybox is a static busybox for the image's /bin/sh and applets.
	// Default DefaultBusybox (Debian's busybox-static). Unused with BaseImage.
	Busybox string
	// SCP is the scp the FROM scratch image carries for legacy scp (scp -O),
	// with the libraries ldd lists for it. Default DefaultSCP (Debian's
	// openssh-client). Unused with BaseImage: that image has its own, or none.
	SCP string
	// BaseImage, when set, is a local image with /bin/sh that the image
	// starts FROM instead of scratch plus busybox (`--image REF`).
	BaseImage string
	// RunID labels everything this launcher creates (LabelRun). Default: a
	// fresh id.
	RunID string
	// Progress, when not nil, gets a line for the image build and each start.
	Progress io.Writer
	// StartTimeout bounds a start, up to the ready line. Default 60s.
	StartTimeout time.Duration
	// StopTimeout is how long a stop waits after SIGTERM before SIGKILL.
	// Default 2s (the server exits on SIGTERM at once).
	StopTimeout time.Duration

	mu    sync.Mutex
	image *Image
	idMu  sync.Mutex
	n     atomic.Int64
}

var _ target.Launcher = (*Launcher)(nil)

func (l *Launcher) runID() string {
	l.idMu.Lock()
	defer l.idMu.Unlock()
	if l.RunID == "" {
		b := make([]byte, 4)
		rand.Read(b)
		l.RunID = time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b)
	}
	return l.RunID
}

// ID is the run id on everything this launcher creates.
func (l *Launcher) ID() string { return l.runID() }

func (l *Launcher) progressf(format string, args ...any) {
	if l.Progress != nil {
		fmt.Fprintf(l.Progress, format, args...)
	}
}

// Launch implements target.Launcher: it prepares the image (once), starts a
// container and waits for the server's ready line. A failed or interrupted
// launch leaves no container behind.
func (l *Launcher) Launch(ctx context.Context, token []byte) (ep *target.Endpoint, err error) {
	img, err := l.Prepare(ctx)
	if err != nil {
		return nil, err
	}
	cli, err := dockerClient(ctx)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("sshrig-%s-%d", l.runID(), l.n.Add(1))
	labels := map[string]string{LabelRig: "true", LabelRun: l.runID()}
	timeout := l.StartTimeout
	if timeout == 0 {
		timeout = DefaultStartTimeout
	}
	ready := &readyWait{cli: cli, timeout: timeout}
	start := time.Now()
	ctr, err := testcontainers.Run(ctx, img.Tag, containerOptions(name, labels, token, ready)...)
	if err != nil {
		err = fmt.Errorf("start container from %s: %w", img.Tag, err)
		l.remove(ctx, cli, ctr, name)
		cli.Close()
		return nil, err
	}
	id := ctr.GetContainerID()
	defer func() {
		if err != nil {
			l.remove(ctx, cli, ctr, name)
			cli.Close()
		}
	}()
	sshAddr, err := published(ctx, ctr, SSHPort)
	if err != nil {
		return nil, err
	}
	ctlAddr, err := published(ctx, ctr, ControlPort)
	if err != nil {
		return nil, err
	}
	l.progressf("sshrig: container %s (%s) ready in %.2fs\n", short(id), img.Tag, time.Since(start).Seconds())
	lr, err := l.openLedger(ctx, cli, id, ready.line.Ledger)
	if err != nil {
		return nil, err
	}
	var stopOnce sync.Once
	var stopErr error
	return &target.Endpoint{
		SSHAddr:     sshAddr,
		ControlAddr: ctlAddr,
		RigHost:     rigHost(ctx, ctr),
		Where:       fmt.Sprintf("container %s (image %s); %s", short(id), img.Tag, ready.line.Hosts),
		Stop: func() error {
			stopOnce.Do(func() {
				lr.Close()
				stopErr = l.remove(ctx, cli, ctr, name)
				cli.Close()
			})
			return stopErr
		},
		Logs:       func() string { return l.logs(cli, id) },
		ReadLedger: lr.Read,
		Alive:      func(ctx context.Context) (bool, string) { return alive(ctx, cli, id) },
	}, nil
}

// containerOptions configures the server's container: its name and labels,
// the serve command with the token, the two ports on loopback, least
// privilege, and ready as the wait strategy.
func containerOptions(name string, labels map[string]string, token []byte, ready *readyWait) []testcontainers.ContainerCustomizer {
	loopback := netip.MustParseAddr("127.0.0.1")
	return []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(tclog.NewNoopLogger()),
		testcontainers.WithName(name),
		testcontainers.WithLabels(labels),
		testcontainers.WithEntrypoint(serverPath),
		testcontainers.WithCmd("serve",
			"--ssh-listen", "0.0.0.0:2222", "--control-listen", "0.0.0.0:2223",
			"--scratch", scratchDir, "--shell", "/bin/sh"),
		// The token travels in the environment, never in argv.
		testcontainers.WithEnv(map[string]string{target.TokenEnv: hex.EncodeToString(token)}),
		// Exactly these two ports, whatever the image EXPOSEs.
		testcontainers.WithExposedPorts(SSHPort, ControlPort),
		testcontainers.WithTmpfs(map[string]string{
			scratchDir: "rw,nosuid,nodev,size=64m,mode=1777",
			"/tmp":     "rw,nosuid,nodev,size=16m,mode=1777",
		}),
		testcontainers.WithConfigModifier(func(c *container.Config) {
			c.User = User
			c.WorkingDir = "/"
		}),
		testcontainers.WithHostConfigModifier(func(h *container.HostConfig) {
			h.PortBindings = network.PortMap{
				network.MustParsePort(SSHPort):     {{HostIP: loopback}},
				network.MustParsePort(ControlPort): {{HostIP: loopback}},
			}
			h.Privileged = false
			h.CapDrop = []string{"ALL"}
			// The server runs as nobody, so no process of the container
			// holds this capability; Docker's seccomp profile allows new
			// user and mount namespaces only to a container that has it,
			// and the server gives each command of a case one, where the
			// case's own /tmp is mounted (docs/server.md).
			h.CapAdd = []string{"CAP_SYS_ADMIN"}
			h.SecurityOpt = []string{"no-new-privileges"}
			h.ReadonlyRootfs = true
			h.Binds, h.Mounts, h.VolumesFrom = nil, nil, nil
			h.PublishAllPorts = false
			// An init as PID 1 reaps the orphans of the commands the server
			// runs (the server reaps only its own children) and forwards
			// SIGTERM to the server.
			init := true
			h.Init = &init
			pids := int64(1024)
			h.PidsLimit = &pids
		}),
		testcontainers.WithWaitStrategy(ready),
	}
}

// openLedger starts the out-of-band ledger reader for container id (ledger
// is the path the ready line named, "" for the default) and proves it works
// with a first read; on error the reader is closed.
func (l *Launcher) openLedger(ctx context.Context, cli *testcontainers.DockerClient, id, ledger string) (*ledgerReader, error) {
	if ledger == "" {
		ledger = scratchDir + "/ledger"
	}
	lr := newLedgerReader(cli, id, ledger)
	if err := lr.start(ctx); err != nil {
		l.progressf("sshrig: no long-lived ledger reader in container %s (%v); each read runs docker exec\n", short(id), err)
	}
	// Prove the out-of-band reading works before any case relies on it.
	if _, err := lr.Read(ctx); err != nil {
		lr.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("container %s: interrupted: %w", short(id), context.Cause(ctx))
		}
		return nil, fmt.Errorf("container %s: cannot read the ledger out of band (the image needs /bin/sh and cat): %w", short(id), err)
	}
	return lr, nil
}

// remove terminates the container, with a context of its own: the run's may
// already be cancelled (SIGINT). It then removes anything else of this
// launch still there (a create the interruption raced with). A container
// already gone is not an error.
func (l *Launcher) remove(ctx context.Context, cli *testcontainers.DockerClient, ctr *testcontainers.DockerContainer, name string) error {
	rctx, cancel := freshContext(ctx, 30*time.Second)
	defer cancel()
	stop := l.StopTimeout
	if stop == 0 {
		stop = DefaultStopTimeout
	}
	var errs []error
	if ctr != nil && ctr.GetContainerID() != "" {
		if err := ctr.Terminate(rctx, testcontainers.StopTimeout(stop)); err != nil && !allGone(err) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", short(ctr.GetContainerID()), err))
		}
	}
	f := labelFilter(LabelRig + "=true")
	f.Add("name", "^/?"+name+"$")
	if list, err := cli.ContainerList(rctx, client.ContainerListOptions{All: true, Filters: f}); err == nil {
		for _, c := range list.Items {
			if _, err := cli.ContainerRemove(rctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); !isGone(err) {
				errs = append(errs, fmt.Errorf("remove container %s: %w", short(c.ID), err))
			}
		}
	} else {
		errs = append(errs, fmt.Errorf("list containers: %w", err))
	}
	return errors.Join(errs...)
}

// allGone: every error joined in err says the container is already gone.
func allGone(err error) bool {
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range u.Unwrap() {
			if e != nil && !allGone(e) {
				return false
			}
		}
		return true
	}
	return isGone(err)
}

// rigHost is the address at which the container reaches the rig's host: its
// network's gateway, the host's end of the container's bridge. A case with a
// jump host listens there for the jump host's connections to the target;
// "" when the container has no gateway (no network), which such cases then
// name.
func rigHost(ctx context.Context, ctr *testcontainers.DockerContainer) string {
	ins, err := ctr.Inspect(ctx)
	if err != nil || ins.NetworkSettings == nil {
		return ""
	}
	for _, n := range ins.NetworkSettings.Networks {
		if n != nil && n.Gateway.Is4() {
			return n.Gateway.String()
		}
	}
	return ""
}

// published is the loopback address a container port is published on.
func published(ctx context.Context, ctr *testcontainers.DockerContainer, port string) (string, error) {
	ins, err := ctr.Inspect(ctx)
	if err != nil {
		return "", fmt.Errorf("inspect container: %w", err)
	}
	if ins.NetworkSettings != nil {
		for _, b := range ins.NetworkSettings.Ports[network.MustParsePort(port)] {
			if b.HostIP.IsLoopback() && b.HostPort != "" {
				return net.JoinHostPort(b.HostIP.String(), b.HostPort), nil
			}
		}
	}
	return "", fmt.Errorf("container %s: port %s is not published on loopback", short(ctr.GetContainerID()), port)
}

// logs is the container's last log lines, stdout and stderr.
func (l *Launcher) logs(cli *testcontainers.DockerClient, id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: fmt.Sprint(logLines)})
	if err != nil {
		return ""
	}
	defer rc.Close()
	var b lockedBuffer
	stdcopy.StdCopy(&b, &b, rc)
	return strings.TrimRight(b.String(), "\n")
}

// alive says whether the container still runs, and if not, how it ended.
func alive(ctx context.Context, cli *testcontainers.DockerClient, id string) (bool, string) {
	res, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		if isGone(err) {
			return false, fmt.Sprintf("container %s no longer exists", short(id))
		}
		return false, fmt.Sprintf("the Docker engine does not answer about container %s: %v", short(id), err)
	}
	st := res.Container.State
	if st == nil {
		return false, fmt.Sprintf("container %s has no state", short(id))
	}
	if st.Running && !st.Paused && !st.Restarting {
		return true, ""
	}
	why := fmt.Sprintf("container %s is %s (exit code %d", short(id), st.Status, st.ExitCode)
	if st.ExitCode > 128 && st.ExitCode < 128+32 {
		why += ": " + syscall.Signal(st.ExitCode-128).String()
	}
	if st.OOMKilled {
		why += ", killed for lack of memory"
	}
	if st.Error != "" {
		why += ", " + st.Error
	}
	if st.FinishedAt != "" && !strings.HasPrefix(st.FinishedAt, "0001-") {
		why += ", finished " + st.FinishedAt
	}
	return false, why + ")"
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// readyWait is the wait strategy: it follows the container's output (no
// polling) until the server prints its ready line, and fails at once if the
// container exits first.
type readyWait struct {
	cli     *testcontainers.DockerClient
	timeout time.Duration
	line    server.ReadyLine
}

var _ wait.Strategy = (*readyWait)(nil)

func (r *readyWait) String() string { return "the server's ready line" }

func (r *readyWait) WaitUntilReady(ctx context.Context, t wait.StrategyTarget) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	ins, err := t.Inspect(ctx)
	if err != nil {
		return err
	}
	rc, err := r.cli.ContainerLogs(ctx, ins.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		return fmt.Errorf("follow the container's output: %w", err)
	}
	pr, pw := io.Pipe()
	var stderr lockedBuffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, err := stdcopy.StdCopy(pw, &stderr, rc)
		pw.CloseWithError(err)
	}()
	defer func() {
		rc.Close()
		pr.Close()
		<-copied
	}()
	var out strings.Builder
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		var line server.ReadyLine
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.SSH != "" && line.Control != "" {
			r.line = line
			return nil
		}
		out.WriteString(sc.Text() + "\n")
	}
	if ctx.Err() != nil {
		return fmt.Errorf("no ready line from the server within %s: %w; its output: %s%s", r.timeout, ctx.Err(), out.String(), stderr.String())
	}
	why := "the server exited before it was ready"
	if st, err := t.State(context.WithoutCancel(ctx)); err == nil {
		why += fmt.Sprintf(" (container %s, exit code %d)", st.Status, st.ExitCode)
	}
	return fmt.Errorf("%s; its output: %s%s", why, out.String(), stderr.String())
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes and reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
