package score

import (
	"context"
	"errors"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/internal/capbuf"
	"github.com/sshrig/sshrig/internal/engine"
)

// handshakeTimeout bounds connect plus handshake of the rig's own SSH
// clients. Generous: under the race detector on two cores a handshake can
// take hundreds of milliseconds, and nothing here cuts a handshake.
const handshakeTimeout = 10 * time.Second

// maxKept bounds what the rig keeps of any output it reads.
const maxKept = 64 << 10

// Attempt is what the rig's in-process client saw of one run of the
// operation's command through the case's cutter.
type Attempt struct {
	Err    string `json:"error,omitempty"`
	Exit   *int   `json:"exit_code,omitempty"`
	Signal string `json:"signal,omitempty"`
	Stdout string `json:"stdout"`
}

// attempt runs command once through run's cutter the way a careful tool
// would: golang.org/x/crypto/ssh with the host key pinned and a deadline on
// connect and handshake (engine.Run.DialTool). It gives up when ctx ends.
// ready, when not nil, is closed as soon as ReadyLine is on stdout.
func attempt(ctx context.Context, run *engine.Run, command string, ready chan struct{}) Attempt {
	client, err := run.DialTool(ctx, handshakeTimeout)
	if err != nil {
		return Attempt{Err: "connect: " + err.Error()}
	}
	defer client.Close()
	stop := context.AfterFunc(ctx, func() { client.Close() })
	defer stop()
	sess, err := client.NewSession()
	if err != nil {
		return Attempt{Err: "session: " + err.Error()}
	}
	defer sess.Close()
	out := capbuf.New(maxKept)
	if ready != nil {
		out.Watch([]byte(ReadyLine+"\n"), ready)
	}
	sess.Stdout = out
	err = sess.Run(command)
	a := Attempt{Stdout: string(out.Bytes())}
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
