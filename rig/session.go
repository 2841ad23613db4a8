package rig

import (
	"context"
	"fmt"

	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/internal/secret"
)

// session is what every run of the rig stands on, `sshrig run` and
// `sshrig reconcile` alike: the started target, the run's secrets, and the
// server's events tapped into the run directory's log. Both commands open
// it here, so their run directories are alike (the same log, the same
// redaction, the same head in the report).
type session struct {
	env     *engine.Env
	secrets []secret.Secret // the run's key in every printed form, and its path
	stop    func()          // ends the event tap once every event is logged
}

// openSession starts the target and, when out is set, logs every server
// event into it. The caller must Close the session.
func openSession(ctx context.Context, target Target, net Net, out *RunDir) (*session, error) {
	launcher, err := target.engineLauncher()
	if err != nil {
		return nil, err
	}
	env, err := engine.Start(ctx, engine.Options{Launcher: launcher, Net: net})
	if err != nil {
		return nil, fmt.Errorf("rig: start server: %w", err)
	}
	secrets, err := secret.WithPath(env.Identity())
	if err != nil {
		env.Close()
		return nil, fmt.Errorf("rig: %w", err)
	}
	s := &session{env: env, secrets: secrets, stop: func() {}}
	if out != nil {
		out.addSecrets(secrets)
		tap := env.Control().Tap()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				e, err := tap.Next(context.Background())
				if err != nil {
					return
				}
				out.logEvent(e)
			}
		}()
		// A reboot case's own container has a control connection of its
		// own: its events go to the log too.
		env.ObserveOwnHosts(out.logEvent)
		s.stop = func() { env.ObserveOwnHosts(nil); tap.Close(); <-done }
	}
	return s, nil
}

// Close stops the tap, so that every event is in the log, then the target.
func (s *session) Close() {
	s.stop()
	s.env.Close()
}
