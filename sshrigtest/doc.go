// Package sshrigtest tests a Go SSH tool with sshrig inside `go test`, in
// the spirit of net/http/httptest: a harness a test holds in three lines.
//
//	func TestMyTool(t *testing.T) {
//		h := sshrigtest.New(t)
//		h.Run(t, sshrigtest.Func("mytool", myTool), "started.*", "none.*")
//	}
//
// Run runs the selected cases of the default matrix (or the harness's own)
// against the tool, then reports each case as a subtest named by its id: a
// failed case fails its subtest with a message that says what the tool
// reported, what was honest, what really happened remotely and which
// assertions it broke; a case that cannot apply to the tool is skipped with
// the reason; an inconclusive case fails, since the rig could not check it.
// RunCase runs one case and returns its report for a test's own assertions.
//
// A tool is a tool.Tool: a Go function given to Func, a program given to
// Exec (as `sshrig run --tool exec:…` runs it), or any type of the caller's.
// The SSH server is embedded by default; WithTarget(rig.Container(l)) puts
// it in a disposable container. Everything a run starts is stopped before
// Run returns, and no goroutine is left behind.
//
// NewServer is the other style: the test holds the rig's SSH server, as it
// would an httptest.Server, and drives its own client code through it,
// with no tool.Tool. The server gives an address, a user, a key, a
// known_hosts file and a host-key-pinned x/crypto/ssh client config; Arm
// cuts the next operation's transport at a moment; the operation then
// gives the truth of what ran remotely (Op.Truth) and the rig's verdict on
// the client's report of it (Op.Judge). The test's cleanup closes it.
package sshrigtest
