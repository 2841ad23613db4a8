package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/engine"
	"github.com/sshrig/sshrig/result"
)

// TestExecCommand runs `sshrig exec` against real cases: a clean run and a
// cut after the start marker.
func TestExecCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := engine.Start(ctx, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	for _, tc := range []struct {
		moment   fault.Moment
		code     int
		category result.Category
	}{
		{fault.None, exitPass, result.Succeeded},
		{fault.Started, exitFail, result.OutcomeUnknown},
	} {
		cr, err := env.Begin(ctx, engine.Spec{ID: env.NewID(), Moment: tc.moment, Cut: fault.Reset, Disposition: fault.Survive})
		if err != nil {
			t.Fatal(err)
		}
		cmd, _ := cr.Wrap("echo hi")
		var stdout, stderr bytes.Buffer
		code := run(ctx, []string{"exec", "--addr", cr.Addr(), "--user", env.User(), "--identity", env.Identity(),
			"--known-hosts", cr.KnownHosts(), "--correlation-id", cr.Spec().ID, "--operation", "op",
			"--command", cmd, "--deadline", "3s"}, &stdout, &stderr)
		if _, err := cr.Finish(ctx, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		r, err := result.Parse(stdout.Bytes())
		if err != nil || code != tc.code || r.Category != tc.category || r.CorrelationID != cr.Spec().ID {
			t.Fatalf("%s: exit %d, result %+v (%v); stderr %s", tc.moment, code, r, err, stderr.String())
		}
	}
	var stderr bytes.Buffer
	if code := run(ctx, []string{"exec", "--addr", "x:1"}, &bytes.Buffer{}, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "--user is required") {
		t.Fatalf("missing flags: exit %d, %s", code, stderr.String())
	}
}
