// Package hostsetup is the set-up step of a command that runs on a case's
// own host: the server starts its own binary again, in a new mount
// namespace, under this package's environment flag; the step bind-mounts the
// case's tmp over /tmp, binds the directories the server must still find
// there back at their paths, enters the command's working directory and
// executes the command in the same process (the same pid, process group and
// files).
//
// The step runs from this package's init, registered wherever the server is
// linked in (sshrig, and every test binary that holds the server), in the
// style of moby's pkg/reexec. The package imports nothing but syscall, so
// that Go initializes it before almost every other package of the binary:
// the step costs a runtime start and a few system calls, not the binary's
// whole initialization.
package hostsetup
