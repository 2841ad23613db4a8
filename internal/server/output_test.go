package server_test

import (
	"slices"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/server"
)

// TestOutputAnnouncedUnheld: a case that names OutputBytes without arming
// the output moment still has that moment on its timeline, announced once,
// unheld, between started and finished; a case that names no OutputBytes
// has none, as before.
func TestOutputAnnouncedUnheld(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.Config{})
	for _, tc := range []struct {
		name string
		arm  control.Arm
		want int // output moments announced
	}{
		{"none with output bytes", control.Arm{OutputBytes: 4}, 1},
		{"started armed with output bytes", control.Arm{Moment: fault.Started, OutputBytes: 4}, 1},
		{"no output bytes", control.Arm{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := r.newCase(tc.arm, nil)
			c.releaseHolds(nil) // cut nothing
			cfg := &gossh.ClientConfig{User: testUser, Auth: []gossh.AuthMethod{gossh.PublicKeys(r.signer)},
				HostKeyCallback: gossh.FixedHostKey(r.srv.HostKey()), Timeout: 10 * time.Second}
			client, err := gossh.Dial("tcp", c.addr, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			sess, err := client.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			out, err := sess.Output(c.wrap("printf 'line one\\n'; printf 'line two\\n'"))
			if err != nil || string(out) != "line one\nline two\n" {
				t.Fatalf("client: %q, %v", out, err)
			}
			client.Close()
			var order []fault.Moment
			var outputs []control.Event
			for _, e := range c.Events() {
				if e.Kind != control.MomentReached {
					continue
				}
				order = append(order, e.Moment)
				if e.Moment == fault.Output {
					outputs = append(outputs, e)
				}
			}
			if len(outputs) != tc.want {
				t.Fatalf("%d output moments, want %d; moments %v", len(outputs), tc.want, order)
			}
			if tc.want == 0 {
				return
			}
			if outputs[0].Hold {
				t.Errorf("the output moment held although the case armed %s", tc.arm.Moment)
			}
			if pos := slices.Index(order, fault.Output); pos < slices.Index(order, fault.Started) || pos > slices.Index(order, fault.Finished) {
				t.Errorf("moments in order %v, want output between started and finished", order)
			}
		})
	}
}
