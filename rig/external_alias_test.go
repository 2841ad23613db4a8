package rig

import (
	"io"

	"github.com/sshrig/sshrig/tool"
)

type (
	toolTarget = tool.Target
	ioWriter   = io.Writer
	toolExit   = tool.ProcessExit
)
