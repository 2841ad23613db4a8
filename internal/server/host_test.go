package server_test

import (
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pkg/sftp"
	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/server"
)

// hostClient is a case's client: one connection, sessions on demand.
type hostClient struct {
	t  testing.TB
	c  *tcase
	cl *gossh.Client
}

func (c *tcase) dial() *hostClient {
	t := c.r.t
	t.Helper()
	cfg := &gossh.ClientConfig{User: testUser, Auth: []gossh.AuthMethod{gossh.PublicKeys(c.r.signer)},
		HostKeyCallback: gossh.FixedHostKey(c.r.srv.HostKey()), Timeout: 10 * time.Second}
	cl, err := gossh.Dial("tcp", c.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return &hostClient{t: t, c: c, cl: cl}
}

// run runs command and returns its output; a non-zero exit is an error.
func (h *hostClient) run(command string) (string, error) {
	s, err := h.cl.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	out, err := s.CombinedOutput(command)
	if err != nil {
		return "", fmt.Errorf("%s: %s: %v: %s", h.c.id, command, err, out)
	}
	return string(out), nil
}

// write writes content to name over SFTP.
func (h *hostClient) write(name, content string) error {
	sc, err := sftp.NewClient(h.cl)
	if err != nil {
		return err
	}
	defer sc.Close()
	f, err := sc.Create(name)
	if err != nil {
		return fmt.Errorf("%s: sftp create %s: %v", h.c.id, name, err)
	}
	_, err = f.Write([]byte(content))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: sftp write %s: %v", h.c.id, name, err)
	}
	return nil
}

// read reads name over SFTP.
func (h *hostClient) read(name string) (string, error) {
	sc, err := sftp.NewClient(h.cl)
	if err != nil {
		return "", err
	}
	defer sc.Close()
	f, err := sc.Open(name)
	if err != nil {
		return "", fmt.Errorf("%s: sftp open %s: %v", h.c.id, name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

// exec, put and get are run, write and read for the test's own goroutine:
// they fail the test on an error.
func (h *hostClient) exec(command string) string {
	h.t.Helper()
	out, err := h.run(command)
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

func (h *hostClient) put(name, content string) {
	h.t.Helper()
	if err := h.write(name, content); err != nil {
		h.t.Fatal(err)
	}
}

func (h *hostClient) get(name string) string {
	h.t.Helper()
	out, err := h.read(name)
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// fixedTmp is a fixed absolute name every case writes, as a tool that
// uploads to /tmp does.
const fixedTmp = "/tmp/sshrig-host-test-job.sh"

// Two cases at once write the same fixed name in their home and the same
// /tmp path, over SFTP and from a command, and each sees only its own
// files; a command runs in its case's home with the ledger where it was.
// After the case, its host is gone.
func TestEveryCaseItsOwnHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  server.Config
		mode string
	}{
		{"namespace per case", server.Config{}, "a mount namespace per case"},
		{"namespaces per command", server.WithCommandNamespaces(server.Config{}), "user and mount namespaces per command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ownHosts(t, tc.cfg, tc.mode)
		})
	}
}

func ownHosts(t *testing.T, cfg server.Config, mode string) {
	r := newRig(t, cfg)
	if m := r.srv.HostModel(); !strings.Contains(m, "/tmp ("+mode+")") {
		if os.Geteuid() == 0 {
			t.Fatalf("HostModel = %q, want /tmp (%s) as root", m, mode)
		}
		t.Skipf("no private /tmp on this machine: %s", m)
	}
	cases := []*tcase{r.newCase(control.Arm{}, nil), r.newCase(control.Arm{}, nil)}
	clients := []*hostClient{cases[0].dial(), cases[1].dial()}
	// Both write before either reads.
	var wrote sync.WaitGroup
	wrote.Add(len(cases))
	var homes [2]string
	var wg sync.WaitGroup
	for i, h := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sameNamesAtOnce(h, &wrote, &homes[i]); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if homes[0] == homes[1] || homes[0] == "" {
		t.Fatalf("homes %q: want two of their own", homes)
	}
	if _, err := os.Stat(fixedTmp); err == nil {
		os.Remove(fixedTmp)
		t.Errorf("%s reached the machine's /tmp", fixedTmp)
	}

	// The ledger is where the server named it, and the command is the
	// process the server started (the set-up step kept its pid).
	c := cases[0]
	clients[0].exec(c.wrap("test -f " + r.srv.Ledger()))
	for _, cl := range clients {
		cl.cl.Close()
	}
	ev := c.Events()
	c.checkRan(0)
	if w := workload(t, ev); w.MarkerPID != w.PID {
		t.Errorf("the marker's shell is %d, the process the server started %d: want the same", w.MarkerPID, w.PID)
	}
	cases[1].end()
	for _, home := range homes {
		if _, err := os.Stat(path.Dir(home)); !os.IsNotExist(err) {
			t.Errorf("the host of %s is still there after its case (%v)", home, err)
		}
	}
}

// sameNamesAtOnce writes the fixed names over SFTP and from a command,
// waits until every case wrote, then checks the case sees only its own
// files; home is the case's home as its commands see it.
func sameNamesAtOnce(h *hostClient, wrote *sync.WaitGroup, home *string) error {
	id := h.c.id
	done := false
	defer func() {
		if !done {
			wrote.Done()
		}
	}()
	if err := h.write("job.sh", "echo sftp-home "+id+"\n"); err != nil {
		return err
	}
	if err := h.write(fixedTmp, "echo sftp-tmp "+id+"\n"); err != nil {
		return err
	}
	// A directory the command leaves unwritable must not keep its host
	// from going.
	out, err := h.run(fmt.Sprintf(`echo exec-home %[1]s > made.txt && echo exec-tmp %[1]s > /tmp/made.txt && mkdir -p ro/in && chmod 500 ro && pwd`, id))
	if err != nil {
		return err
	}
	*home = strings.TrimSpace(out)
	done = true
	wrote.Done()
	wrote.Wait()
	got, err := h.run("sh job.sh; sh " + fixedTmp + "; cat made.txt /tmp/made.txt; echo \"$HOME\"")
	if err != nil {
		return err
	}
	if want := fmt.Sprintf("sftp-home %[1]s\nsftp-tmp %[1]s\nexec-home %[1]s\nexec-tmp %[1]s\n%[2]s\n", id, *home); got != want {
		return fmt.Errorf("%s: its commands see %q, want %q", id, got, want)
	}
	var viaSFTP strings.Builder
	for _, name := range []string{"made.txt", "/tmp/made.txt", path.Join(*home, "job.sh")} {
		b, err := h.read(name)
		if err != nil {
			return err
		}
		viaSFTP.WriteString(b)
	}
	if want := fmt.Sprintf("exec-home %[1]s\nexec-tmp %[1]s\necho sftp-home %[1]s\n", id); viaSFTP.String() != want {
		return fmt.Errorf("%s: its SFTP sees %q, want %q", id, viaSFTP.String(), want)
	}
	return nil
}

// Without a private mount namespace each case still has its own home and
// SFTP tree, and its commands' TMPDIR; the server says /tmp is shared.
func TestHostFallback(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.Config{NoNamespaces: true})
	if m := r.srv.HostModel(); !strings.Contains(m, "share the machine's /tmp") {
		t.Errorf("HostModel = %q, want it to say /tmp is shared", m)
	}
	a, b := r.newCase(control.Arm{}, nil), r.newCase(control.Arm{}, nil)
	ha, hb := a.dial(), b.dial()
	ha.put("job.sh", "a\n")
	hb.put("job.sh", "b\n")
	if got := ha.exec("cat job.sh") + hb.get("job.sh"); got != "a\nb\n" {
		t.Errorf("the cases see %q, want each its own job.sh", got)
	}
	// Without a namespace the commands' /tmp is the machine's: SFTP does
	// not pretend otherwise by putting /tmp into the case's tree (where the
	// commands would not find it); it refuses, naming what it can reach.
	sc, err := sftp.NewClient(ha.cl)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if _, err := sc.Create(fixedTmp); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("sftp create %s without a namespace: %v, want permission denied", fixedTmp, err)
	}
	if _, err := os.Stat(fixedTmp); err == nil {
		os.Remove(fixedTmp)
		t.Errorf("%s reached the machine's /tmp over SFTP", fixedTmp)
	}
	if got := ha.exec(`[ "$TMPDIR" != /tmp ] && [ -d "$TMPDIR" ] && echo own`); got != "own\n" {
		t.Errorf("TMPDIR check says %q, want the case's own directory", got)
	}
}

// The probe, and a case set up with a shared host, run in the scratch
// directory, as one host: what one leaves, the next finds.
func TestSharedHost(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.Config{})
	shared := func(req *control.Request) { req.SharedHost = true }
	a, b := r.newCase(control.Arm{}, shared), r.newCase(control.Arm{}, shared)
	a.dial().put("left.txt", "from a\n")
	if got := b.dial().exec("pwd; cat left.txt"); got != r.srv.Scratch()+"\nfrom a\n" {
		t.Errorf("the second shared case sees %q, want the scratch directory and the first's file", got)
	}
	// Outside the host, SFTP refuses.
	sc, err := sftp.NewClient(a.dial().cl)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if _, err := sc.Create("/etc/sshrig-host-test"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("create outside the host: %v, want permission denied", err)
	}
}

// A client that goes away with a file open sent no close: the request
// server's own cleanup is not a step of the tool's conversation.
func TestSFTPCleanupIsNoRequest(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.Config{})
	c := r.newCase(control.Arm{}, nil)
	h := c.dial()
	sc, err := sftp.NewClient(h.cl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Create("left-open.txt"); err != nil {
		t.Fatal(err)
	}
	h.cl.Close() // no close request, no sftp session end
	sc.Close()
	conv := steps(c.Events())
	if !slices.Contains(conv, "sftp-open+") || slices.Contains(conv, "sftp-close+") {
		t.Errorf("conversation %v: want the open and no close", conv)
	}
}
