package containers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// Labels on everything the rig creates (containers and images).
const (
	LabelRig = "org.sshrig.rig" // always "true"
	LabelRun = "org.sshrig.run" // the run that created it
	// LabelContent is the content hash an image is tagged with.
	LabelContent = "org.sshrig.content"
)

// ErrNoDocker means no Docker engine answered. Errors wrapping it say what
// to do.
var ErrNoDocker = errors.New("no Docker engine")

var setupOnce sync.Once

// setup prepares testcontainers-go for the rig; every entry point calls it
// before the first testcontainers call.
func setup() {
	setupOnce.Do(func() {
		// The reaper (Ryuk) is a container image that testcontainers pulls
		// on first use. The rig must run with no registry, so it is off and
		// the rig removes its own containers (Launcher's Stop, GC).
		// testcontainers reads this variable once, at its first use, so it
		// must be set before that; a value the user set is kept.
		if _, ok := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !ok {
			os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		}
		// testcontainers narrates every step on stderr (with emoji); the rig
		// reports what matters itself.
		tclog.SetDefault(tclog.NewNoopLogger())
	})
}

// dockerClient connects to the Docker engine testcontainers would use
// (DOCKER_HOST, the docker context, ~/.testcontainers.properties) and checks
// it answers. Without one the error wraps ErrNoDocker.
func dockerClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	setup()
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	// testcontainers falls back to the default socket when DOCKER_HOST does
	// not answer; a user who names an engine means that engine.
	if os.Getenv("DOCKER_HOST") != "" {
		raw, err := client.New(client.FromEnv)
		if err == nil {
			_, err = raw.Ping(pctx, client.PingOptions{})
			raw.Close()
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, noDocker(err)
		}
	}
	cli, err := newDockerClient(ctx)
	if err == nil {
		if _, err = cli.Ping(pctx, client.PingOptions{}); err != nil {
			cli.Close()
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, noDocker(err)
	}
	return cli, nil
}

// newDockerClient is testcontainers' client, whose first call finds the
// engine once per process and panics when that look-up fails, as it does
// when its context ends (a Ctrl-C while the run starts). The look-up gets
// the caller's values and a deadline but not its cancellation, and a panic
// left anyway is an error.
func newDockerClient(ctx context.Context) (cli *testcontainers.DockerClient, err error) {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			cli, err = nil, fmt.Errorf("finding the Docker engine: %v", p)
		}
	}()
	return testcontainers.NewDockerClientWithOpts(hctx)
}

func noDocker(cause error) error {
	where := os.Getenv("DOCKER_HOST")
	if where == "" {
		where = "the default socket"
	}
	return fmt.Errorf("%w at %s (%v): the container target needs a running Docker engine; start Docker (or point DOCKER_HOST at one), or run with --target embedded",
		ErrNoDocker, where, cause)
}

// isGone: the object is already removed (or being removed).
func isGone(err error) bool {
	return err == nil || cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) && containsAny(err.Error(), "already in progress", "is already")
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func labelFilter(kv ...string) client.Filters {
	f := client.Filters{}
	for _, l := range kv {
		f.Add("label", l)
	}
	return f
}

// freshContext outlives ctx's cancellation (a run interrupted by SIGINT
// still has to remove its container) but not d.
func freshContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}
