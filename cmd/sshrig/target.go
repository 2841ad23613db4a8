package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sshrig/sshrig/containers"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/rig"
)

// targetFlags choose where the SSH server runs; `run` and `reconcile` share
// them.
type targetFlags struct {
	target       string
	image        string // --image: base image instead of scratch plus busybox
	serverBinary string // --server-binary: static sshrig to run in the container
	runID        string // --run-id: the label on the run's containers and images
}

// runIDRE is what a run id may be: it is part of a container's name.
var runIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (f *targetFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.target, "target", "embedded", "where the SSH server runs: embedded (in this process) or container (a disposable Docker container; docs/containers.md)")
	fl.StringVar(&f.image, "image", "", "--target container: build the server image FROM this local image (it must have /bin/sh) instead of scratch plus busybox")
	fl.StringVar(&f.serverBinary, "server-binary", "", "--target container: static linux build of sshrig to run in the container (default: this executable, if static)")
	fl.StringVar(&f.runID, "run-id", "", "--target container: the run id labelling this run's containers and images ("+containers.LabelRun+"; default: a fresh one, printed); 'sshrig gc --run ID' removes only them")
}

// launcher is the server's launcher for --target. For a container it
// prepares the image first: no Docker, a binary that is not static or a base
// image that is not there stop the command before it starts (exit 3).
func (f *targetFlags) launcher(cmd *cobra.Command, quiet bool) (engine.Launcher, error) {
	switch f.target {
	case "embedded":
		if f.image != "" || f.serverBinary != "" || f.runID != "" {
			return nil, usageError("--image, --server-binary and --run-id apply to --target container only")
		}
		return engine.InProcess{}, nil
	case "container":
		if f.serverBinary != "" {
			if st, err := os.Stat(f.serverBinary); err != nil {
				return nil, usageError("--server-binary: %v", err)
			} else if st.IsDir() {
				return nil, usageError("--server-binary: %s is a directory", f.serverBinary)
			}
		}
		if f.runID != "" && !runIDRE.MatchString(f.runID) {
			return nil, usageError("--run-id %q: letters, digits, '_', '.' and '-' only, starting with a letter or digit", f.runID)
		}
		cl := &containers.Launcher{ServerBinary: f.serverBinary, BaseImage: f.image, RunID: f.runID}
		if !quiet {
			cl.Progress = cmd.ErrOrStderr()
			fmt.Fprintf(cmd.ErrOrStderr(), "sshrig: this run's containers are labelled %s=%s ('sshrig gc --run %s' removes them if the run is killed)\n", containers.LabelRun, cl.ID(), cl.ID())
		}
		if _, err := cl.Prepare(cmd.Context()); err != nil {
			return nil, rigError(fmt.Errorf("--target container: %w", err))
		}
		return cl, nil
	}
	return nil, usageError("unknown target %q (valid: embedded, container)", f.target)
}

// rigTarget is --target as a rig.Target, its image prepared as launcher does.
func (f *targetFlags) rigTarget(cmd *cobra.Command, quiet bool) (rig.Target, error) {
	l, err := f.launcher(cmd, quiet)
	if err != nil {
		return rig.Target{}, err
	}
	if cl, ok := l.(*containers.Launcher); ok {
		return rig.Container(cl), nil
	}
	return rig.Embedded(), nil
}

// createRunDir creates the run directory --out names, or a new dated one
// under ./sshrig-runs/.
func createRunDir(out string) (*rig.RunDir, string, error) {
	path := out
	if path == "" {
		path = rig.DefaultRunDir("sshrig-runs", time.Now())
	}
	dir, err := rig.CreateRunDir(path)
	if err != nil {
		return nil, "", usageError("run directory: %v", err)
	}
	if out == "" {
		pointLatest("sshrig-runs", path) // latest.go
	}
	return dir, path, nil
}

// writeJSONCopy writes --json's copy of the report rig put in the run
// directory; a failure is said on stderr, and the run goes on to say its
// verdicts.
func writeJSONCopy(stderr io.Writer, path string, report []byte) {
	if err := os.WriteFile(path, report, 0o644); err != nil {
		fmt.Fprintf(stderr, "sshrig: --json: %v\n", err)
	}
}
