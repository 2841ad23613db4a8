package scorerun

import (
	"context"
	"errors"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/internal/capbuf"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/reconcile/score"
)

// handshakeTimeout bounds connect plus handshake of the rig's own SSH
// clients. Generous: under the race detector on two cores a handshake can
// take hundreds of milliseconds, and nothing here cuts a handshake.
const handshakeTimeout = 10 * time.Second

// maxKept bounds what the rig keeps of any output it reads.
const maxKept = 64 << 10

// attempt runs command once through run's cutter the way a careful tool
// would: golang.org/x/crypto/ssh with the host key pinned and a deadline on
// connect and handshake (engine.Run.DialTool). It gives up when ctx ends.
// ready, when not nil, is closed as soon as score.ReadyLine is on stdout.
func attempt(ctx context.Context, run *engine.Run, command string, ready chan struct{}) score.Attempt {
	client, err := run.DialTool(ctx, handshakeTimeout)
	if err != nil {
		return score.Attempt{Err: "connect: " + err.Error()}
	}
	defer client.Close()
	stop := context.AfterFunc(ctx, func() { client.Close() })
	defer stop()
	sess, err := client.NewSession()
	if err != nil {
		return score.Attempt{Err: "session: " + err.Error()}
	}
	defer sess.Close()
	out := capbuf.New(maxKept)
	if ready != nil {
		out.Watch([]byte(score.ReadyLine+"\n"), ready)
	}
	sess.Stdout = out
	err = sess.Run(command)
	a := score.Attempt{Stdout: string(out.Bytes())}
	var ee *gossh.ExitError
	switch {
	case err == nil:
		a.Exit = new(int)
	case errors.As(err, &ee) && ee.Signal() != "":
		a.Signal = ee.Signal()
	case errors.As(err, &ee):
		code := ee.ExitStatus()
		a.Exit = &code
	default:
		a.Err = err.Error()
	}
	return a
}
