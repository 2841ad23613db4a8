// Command tcpkeepalive-go is a tool under test written the way many Go
// tools are: golang.org/x/crypto/ssh over a net.Dialer with TCP keepalive
// on (1 s idle, 1 s between probes, 2 probes) and nothing else watching the
// connection: no SSH keepalive, no deadline of its own. It reports honestly
// what it knows, as one result object (docs/result.schema.json).
//
// Whether it ever notices a dead connection depends on who answers its
// packets. Behind the rig's proxy (--net proxy) the proxy's kernel
// acknowledges everything, so a blackholed connection looks alive and the
// tool hangs. On the kernel network (--net kernel) nothing is acknowledged
// any more, and what the tool's kernel does is the kernel's: keepalive
// probes are sent only while no data waits for an acknowledgement, and
// x/crypto/ssh has just sent one (the session's EOF), so the kernel
// retransmits it for as long as tcp_retries2 allows (about 15 minutes) and
// the tool hangs there too. With -user-timeout D the socket also has
// TCP_USER_TIMEOUT: unacknowledged data older than D ends the connection,
// and on the kernel network the tool reports outcome_unknown after about D.
// docs/network.md has the measured table.
//
//	go build -o /tmp/tcpkeepalive-go ./docs/examples/tcpkeepalive-go
//	sshrig run --tool 'exec:/tmp/tcpkeepalive-go -user-timeout 3s' --net kernel --cases started.blackhole.survive
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	"golang.org/x/sys/unix"

	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// userTimeout is TCP_USER_TIMEOUT; 0 leaves the kernel's default (none).
var userTimeout = flag.Duration("user-timeout", 0, "TCP_USER_TIMEOUT on the socket (0: the kernel's default, none)")

func main() {
	flag.Parse()
	t, err := tool.FromEnv(os.Getenv)
	if err != nil {
		emit(result.Result{Category: result.LocalFailure, Retry: result.Never, Message: err.Error() + "; nothing was sent"})
		return
	}
	emit(attempt(t))
}

func emit(r result.Result) {
	json.NewEncoder(os.Stdout).Encode(r)
}

func attempt(t tool.Target) result.Result {
	r := result.Result{Operation: t.Operation, CorrelationID: t.CorrelationID}
	fail := func(category result.Category, retry result.Retry, format string, args ...any) result.Result {
		r.Category, r.Retry, r.Message = category, retry, fmt.Sprintf(format, args...)
		return r
	}
	key, err := os.ReadFile(t.Identity)
	if err != nil {
		return fail(result.LocalFailure, result.Never, "cannot read the identity; nothing was sent")
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return fail(result.LocalFailure, result.Never, "cannot parse the identity; nothing was sent")
	}
	hostKeys, err := knownhosts.New(t.KnownHosts)
	if err != nil {
		return fail(result.LocalFailure, result.Never, "known_hosts: %v; nothing was sent", err)
	}
	d := net.Dialer{Timeout: 2 * time.Second, KeepAliveConfig: net.KeepAliveConfig{
		Enable: true, Idle: time.Second, Interval: time.Second, Count: 2}}
	if *userTimeout > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(userTimeout.Milliseconds()))
			})
			return errors.Join(err, serr)
		}
	}
	conn, err := d.Dial("tcp", t.Addr)
	if err != nil {
		return fail(result.LocalFailure, result.Bounded, "connect: %v; nothing was sent", err)
	}
	// The handshake is bounded; after it, only TCP keepalive watches.
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	cfg := &ssh.ClientConfig{User: t.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: hostKeys}
	c, chans, reqs, err := ssh.NewClientConn(conn, t.Addr, cfg)
	if err != nil {
		conn.Close()
		return fail(result.LocalFailure, result.Bounded, "handshake: %v; nothing was sent", err)
	}
	conn.SetDeadline(time.Time{})
	client := ssh.NewClient(c, chans, reqs)
	defer client.Close()
	session, err := client.NewSession()
	if err != nil {
		return fail(result.LocalFailure, result.Bounded, "session: %v; nothing was sent", err)
	}
	defer session.Close()
	if err := session.Start(t.Command); err != nil {
		// The exec request may have left before the error.
		return fail(result.OutcomeUnknown, result.ReconcileFirst, "exec: %v; the command may have run: reconcile before retrying", err)
	}
	err = session.Wait()
	var exit *ssh.ExitError
	switch {
	case err == nil:
		r.OK = true
		return fail(result.Succeeded, result.Never, "the remote command exited 0")
	case errors.As(err, &exit) && exit.Signal() == "":
		return fail(result.ConfirmedFailure, result.Never, "the remote command exited %d", exit.ExitStatus())
	case errors.As(err, &exit):
		return fail(result.ConfirmedFailure, result.Never, "the server reported the remote command killed by %s", exit.Signal())
	default:
		return fail(result.OutcomeUnknown, result.ReconcileFirst, "the command was sent and no exit status arrived (%v): reconcile before retrying", err)
	}
}
