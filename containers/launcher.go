package containers

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
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
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"
	gossh "golang.org/x/crypto/ssh"

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
func (l *Launcher) Launch(ctx context.Context, token []byte) (*target.Endpoint, error) {
	return l.launch(ctx, token, nil)
}

var _ target.Rebooter = (*Launcher)(nil)

// LaunchRebootable implements target.Rebooter: a container of one case's
// own, whose Endpoint.Reboot restarts it for real. What a restart must keep
// lives where a restart keeps it: the scratch directory (the case's host
// and the ledger) on a volume of the container's own, removed with it, and
// the host key in the container's environment, as the token is. /tmp stays
// a tmpfs: a host's /tmp does not survive its reboot.
func (l *Launcher) LaunchRebootable(ctx context.Context, token []byte) (*target.Endpoint, error) {
	key, err := hostKeyPEM()
	if err != nil {
		return nil, err
	}
	return l.launch(ctx, token, &rebootable{hostKey: key})
}

// rebootable is what a container that restarts needs beyond a run's shared
// one: the host key its server keeps across restarts.
type rebootable struct{ hostKey string }

// hostKeyPEM is a fresh ed25519 host key as target.HostKeyEnv carries it.
func hostKeyPEM() (string, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("host key: %w", err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "sshrig rebootable host")
	if err != nil {
		return "", fmt.Errorf("host key: %w", err)
	}
	return string(pem.EncodeToMemory(block)), nil
}

func (l *Launcher) launch(ctx context.Context, token []byte, reb *rebootable) (ep *target.Endpoint, err error) {
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
	// The start is not cut short by ctx: Docker goes on creating a
	// container whose request the client abandoned, so a removal looking
	// for it by name at once can come first and leave it behind in state
	// "created". The start runs to its end, bounded by its own timeout;
	// then a ctx that ended removes what it made.
	runCtx, endRun := context.WithTimeout(context.WithoutCancel(ctx), timeout+30*time.Second)
	ctr, err := testcontainers.Run(runCtx, img.Tag, containerOptions(name, labels, token, ready, reb)...)
	endRun()
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
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
	ep = &target.Endpoint{
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
	}
	if reb != nil {
		ep.Where = "a container of the case's own: " + ep.Where
		boots := 1
		ep.Reboot = func(ctx context.Context, pause time.Duration) (target.Reboot, error) {
			rb, err := l.reboot(ctx, cli, ctr, ready, boots, pause, lr)
			boots++
			return rb, err
		}
	}
	return ep, nil
}

// reboot restarts container ctr for real, its host down for pause: it
// kills the container (SIGKILL to its init, and with it, by the end of its
// PID namespace, to every process in it), waits until it has stopped,
// waits pause, starts it again and waits for the ready line of its boot
// (boots have printed one each before), then says where its ports are now.
// The out-of-band ledger reader is started anew: its shell died too.
func (l *Launcher) reboot(ctx context.Context, cli *testcontainers.DockerClient, ctr *testcontainers.DockerContainer, ready *readyWait, boots int, pause time.Duration, lr *ledgerReader) (target.Reboot, error) {
	id := ctr.GetContainerID()
	var rb target.Reboot
	start := time.Now()
	if _, err := cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return rb, fmt.Errorf("container %s: kill: %w", short(id), err)
	}
	waited := cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-waited.Result:
	case err := <-waited.Error:
		return rb, fmt.Errorf("container %s: wait until it stopped: %w", short(id), err)
	}
	stopped := time.Now()
	rb.Stop = stopped.Sub(start)
	t := time.NewTimer(pause)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return rb, fmt.Errorf("container %s: interrupted while down: %w", short(id), context.Cause(ctx))
	}
	startAt := time.Now()
	rb.Down = startAt.Sub(stopped)
	if _, err := cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return rb, fmt.Errorf("container %s: start again: %w", short(id), err)
	}
	again := &readyWait{cli: cli, timeout: ready.timeout, skip: boots}
	if err := again.WaitUntilReady(ctx, ctr); err != nil {
		return rb, fmt.Errorf("container %s after its restart: %w", short(id), err)
	}
	rb.Start = time.Since(startAt)
	var err error
	if rb.SSHAddr, err = published(ctx, ctr, SSHPort); err != nil {
		return rb, err
	}
	if rb.ControlAddr, err = published(ctx, ctr, ControlPort); err != nil {
		return rb, err
	}
	if err := lr.reopen(ctx); err != nil {
		l.progressf("sshrig: no long-lived ledger reader in container %s after its restart (%v); each read runs docker exec\n", short(id), err)
	}
	l.progressf("sshrig: container %s restarted: stopped in %.2fs, down %.2fs, ready %.2fs after its start\n", short(id), rb.Stop.Seconds(), rb.Down.Seconds(), rb.Start.Seconds())
	return rb, nil
}

// containerOptions configures the server's container: its name and labels,
// the serve command with the token, the two ports on loopback, least
// privilege, and ready as the wait strategy.
//
// A rebootable container (reb not nil) differs in what a restart must keep:
// its scratch directory is a volume of its own, labelled as the container
// is and removed with it, and its server gets the host key it keeps.
func containerOptions(name string, labels map[string]string, token []byte, ready *readyWait, reb *rebootable) []testcontainers.ContainerCustomizer {
	loopback := netip.MustParseAddr("127.0.0.1")
	env := map[string]string{target.TokenEnv: hex.EncodeToString(token)}
	tmpfs := map[string]string{
		scratchDir: "rw,nosuid,nodev,size=64m,mode=1777",
		"/tmp":     "rw,nosuid,nodev,size=16m,mode=1777",
	}
	var mounts []mount.Mount
	if reb != nil {
		env[target.HostKeyEnv] = reb.hostKey
		delete(tmpfs, scratchDir)
		// An anonymous volume starts as a copy of the image's /scratch
		// (mode 1777), so the server, as nobody, may write there.
		mounts = []mount.Mount{{Type: mount.TypeVolume, Target: scratchDir, VolumeOptions: &mount.VolumeOptions{Labels: labels}}}
	}
	return []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(tclog.NewNoopLogger()),
		testcontainers.WithName(name),
		testcontainers.WithLabels(labels),
		testcontainers.WithEntrypoint(serverPath),
		testcontainers.WithCmd("serve",
			"--ssh-listen", "0.0.0.0:2222", "--control-listen", "0.0.0.0:2223",
			"--scratch", scratchDir, "--shell", "/bin/sh"),
		// The token travels in the environment, never in argv.
		testcontainers.WithEnv(env),
		// Exactly these two ports, whatever the image EXPOSEs.
		testcontainers.WithExposedPorts(SSHPort, ControlPort),
		testcontainers.WithTmpfs(tmpfs),
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
			h.Binds, h.Mounts, h.VolumesFrom = nil, mounts, nil
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
	// skip is how many ready lines to pass over: those of the container's
	// earlier boots, which its output still holds.
	skip int
	line server.ReadyLine
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
			if r.skip > 0 {
				r.skip--
				continue
			}
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
