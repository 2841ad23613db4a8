package rig

import (
	"github.com/sshrig/sshrig/containers"
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
	launcher *containers.Launcher
}

// Embedded is the embedded target (the zero Target).
func Embedded() Target { return Target{} }

// Container is the container target: the same server in a disposable
// container that l starts. In a test binary, set its
// ServerBinary to a static build of sshrig: the test binary is not one.
func Container(l *containers.Launcher) Target {
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
	return t.launcher, nil
}
