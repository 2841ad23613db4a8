package server_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pkg/sftp"
	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/server"
)

// TestOneConnectionManySessions: 16 cases in parallel, each a Go client that
// on one connection runs a probe under a terminal, uploads a file over SFTP
// and runs the workload in a shell fed on stdin. Every request, process and
// marker lands in its own case.
func TestOneConnectionManySessions(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.Config{})
	const n = 16
	cases := make([]*tcase, n)
	for i := range cases {
		cases[i] = r.newCase(control.Arm{}, nil)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.goClient(r, i)
		}()
	}
	wg.Wait()
	for i, c := range cases {
		if errs[i] != nil {
			t.Errorf("case %d: %v", i, errs[i])
			continue
		}
		ev := c.Events()
		for _, e := range ev {
			if e.Case != c.id {
				t.Errorf("case %s got an event of %q: %+v", c.id, e.Case, e)
			}
		}
		c.checkRan(i % 7)
		w := workload(t, ev)
		if req := requestAt(ev, w.Ref); req.Request != "shell" || req.Conn != 1 {
			t.Errorf("case %d: workload refers to %+v, want the shell", i, req)
		}
		l := c.ledger()
		if len(l) > 0 && l[0].PID != w.MarkerPID {
			t.Errorf("case %d: marker pid %d, workload event says %d", i, l[0].PID, w.MarkerPID)
		}
		if spawned := len(find(ev, control.ProcSpawned)); spawned != 2 {
			t.Errorf("case %d: %d processes, want 2 (probe and shell)", i, spawned)
		}
		conv := strings.Join(steps(ev), " ")
		for _, want := range []string{"global:keepalive@openssh.com-", "pty-req+", "env+", "env-", "sftp-write+", "shell+"} {
			if !strings.Contains(conv, want) {
				t.Errorf("case %d: conversation %s lacks %s", i, conv, want)
			}
		}
	}
}

func (c *tcase) goClient(r *rig, i int) error {
	cfg := &gossh.ClientConfig{User: testUser, Auth: []gossh.AuthMethod{gossh.PublicKeys(r.signer)},
		HostKeyCallback: gossh.FixedHostKey(r.srv.HostKey()), Timeout: 10 * time.Second}
	client, err := gossh.Dial("tcp", c.addr, cfg)
	if err != nil {
		return err
	}
	defer client.Close()
	if ok, _, err := client.SendRequest("keepalive@openssh.com", true, nil); err != nil || ok {
		return fmt.Errorf("keepalive answered %v, %v; sshd refuses it", ok, err)
	}
	// A probe under a terminal, with the environment sshd accepts and one
	// it refuses.
	probe, err := client.NewSession()
	if err != nil {
		return err
	}
	if err := probe.Setenv("LANG", "C.UTF-8"); err != nil {
		return fmt.Errorf("LANG refused: %v", err)
	}
	if err := probe.Setenv("SSHRIG_NOT_ACCEPTED", "x"); err == nil {
		return fmt.Errorf("an env variable sshd refuses was accepted")
	}
	if err := probe.RequestPty("xterm", 24, 80, gossh.TerminalModes{}); err != nil {
		return err
	}
	out, err := probe.CombinedOutput(`test -t 0 && echo "$LANG"`)
	probe.Close()
	if err != nil || !strings.Contains(string(out), "C.UTF-8") {
		return fmt.Errorf("probe: %v, %q", err, out)
	}
	// An upload on a second session.
	sc, err := sftp.NewClient(client)
	if err != nil {
		return err
	}
	f, err := sc.Create(fmt.Sprintf("upload-%s", c.id))
	if err == nil {
		_, err = f.Write([]byte("payload\n"))
		f.Close()
	}
	sc.Close()
	if err != nil {
		return fmt.Errorf("sftp: %v", err)
	}
	// The workload in a shell on a third.
	sh, err := client.NewSession()
	if err != nil {
		return err
	}
	defer sh.Close()
	sh.Stdin = strings.NewReader(c.wrap(fmt.Sprintf("cat upload-%s; exit %d", c.id, i%7)) + "\n")
	var stdout bytes.Buffer
	sh.Stdout = &stdout
	if err := sh.Shell(); err != nil {
		return err
	}
	err = sh.Wait()
	if ee, ok := err.(*gossh.ExitError); (i%7 == 0 && err != nil) || (i%7 != 0 && (!ok || ee.ExitStatus() != i%7)) {
		return fmt.Errorf("shell: %v, want exit %d", err, i%7)
	}
	if !strings.Contains(stdout.String(), "payload") {
		return fmt.Errorf("shell output %q", stdout.String())
	}
	return nil
}
