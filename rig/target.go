package rig

import (
	"fmt"

	"github.com/sshrig/sshrig/internal/engine"
)

// Target names of the built-in targets, as reports spell them.
const (
	TargetEmbedded  = "embedded"
	TargetContainer = "container"
)

// A Target says where the rig's SSH server runs. The zero value is the
// embedded target: the server in this process, on loopback, its commands in a
// private scratch directory.
type Target struct {
	name     string
	launcher ContainerLauncher
}

// Embedded is the embedded target (the zero Target).
func Embedded() Target { return Target{} }

// ContainerLauncher starts the container target's servers: a
// *containers.Launcher. (Package containers uses rig in its tests, so rig
// names it by what it does.)
type ContainerLauncher interface {
	// ID is the run id that labels every container it starts.
	ID() string
}

// Container is the container target: the same server in a disposable
// container that l, a *containers.Launcher, starts. In a test binary, set its
// ServerBinary to a static build of sshrig: the test binary is not one.
func Container(l ContainerLauncher) Target {
	return Target{name: TargetContainer, launcher: l}
}

// Name is the target's name in reports.
func (t Target) Name() string {
	if t.name == "" {
		return TargetEmbedded
	}
	return t.name
}

func (t Target) engineLauncher() (engine.Launcher, error) {
	if t.launcher == nil {
		return engine.InProcess{}, nil
	}
	l, ok := t.launcher.(engine.Launcher)
	if !ok {
		return nil, fmt.Errorf("rig: target %s: %T cannot start a server; use a *containers.Launcher", t.Name(), t.launcher)
	}
	return l, nil
}
