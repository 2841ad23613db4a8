package server_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/internal/cutter"
	"github.com/sshrig/sshrig/internal/server"
	"github.com/sshrig/sshrig/internal/testpeer"
	"github.com/sshrig/sshrig/markers"
)

// testUser is the user real clients log in as.
const testUser = "sshrig"

// rig is a server, the control connection to it and a client key, as the
// rig's engine holds them, small enough to drive real clients in tests.
type rig struct {
	t       testing.TB
	srv     *server.Server
	ctl     *control.Client
	dir     string
	key     string // OpenSSH private key file
	signer  gossh.Signer
	known   string // known_hosts matching any host
	sshAddr string
	ids     atomic.Int64
}

func newRig(t testing.TB, cfg server.Config) *rig {
	t.Helper()
	sshLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctlLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	token := make([]byte, 32)
	rand.Read(token)
	cfg.SSH, cfg.Control, cfg.Token = sshLn, ctlLn, token
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	r := &rig{t: t, srv: srv, dir: t.TempDir(), sshAddr: sshLn.Addr().String()}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r.ctl, err = control.Dial(ctx, ctlLn.Addr().String(), token); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.ctl.Close() })

	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	if r.signer, err = gossh.NewSignerFromKey(priv); err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	r.key = filepath.Join(r.dir, "id_ed25519")
	if err := os.WriteFile(r.key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	r.known = filepath.Join(r.dir, "known_hosts")
	if err := os.WriteFile(r.known, []byte("* "+string(gossh.MarshalAuthorizedKey(srv.HostKey()))), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.ctl.Do(ctx, control.Request{Op: control.OpAuthorize, User: testUser,
		Keys: []string{string(gossh.MarshalAuthorizedKey(r.signer.PublicKey()))}}); err != nil {
		t.Fatal(err)
	}
	return r
}

// tcase is one case: its cutter (which writes the preamble) and its events.
type tcase struct {
	r    *rig
	id   string
	cut  *cutter.Cutter
	addr string
	host string
	port string

	mu     sync.Mutex
	events []control.Event
	// arrived is closed (and replaced) whenever an event is appended, so
	// waiters watch the one list the reader fills instead of subscribing
	// themselves: a second subscription made after the reader took an event
	// from its own, but before it appended it, would miss that event.
	arrived chan struct{}
	ended   chan struct{}
	// onHold, when set, is called (on the event reader) for a holding moment.
	onHold func(control.Event)
}

// newCase sets a case up; edit may change the setup request.
func (r *rig) newCase(arm control.Arm, edit func(*control.Request)) *tcase {
	t := r.t
	t.Helper()
	c := &tcase{r: r, id: fmt.Sprintf("case-%d-%d", os.Getpid(), r.ids.Add(1)), arrived: make(chan struct{}), ended: make(chan struct{})}
	sub := r.ctl.Subscribe(c.id)
	req := control.Request{Op: control.OpSetupCase, Case: c.id, Arm: &arm}
	if edit != nil {
		edit(&req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.ctl.Do(ctx, req); err != nil {
		t.Fatal(err)
	}
	var err error
	if c.cut, err = cutter.Listen(r.sshAddr, c.id); err != nil {
		t.Fatal(err)
	}
	c.addr = c.cut.Addr()
	c.host, c.port, _ = net.SplitHostPort(c.addr)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer sub.Close()
		for {
			e, err := sub.Next(context.Background())
			if err != nil {
				return
			}
			c.mu.Lock()
			c.events = append(c.events, e)
			close(c.arrived)
			c.arrived = make(chan struct{})
			hook := c.onHold
			c.mu.Unlock()
			if e.Kind == control.MomentReached && e.Hold && hook != nil {
				hook(e)
			}
			if e.Kind == control.CaseEnded {
				close(c.ended)
				return
			}
		}
	}()
	t.Cleanup(func() {
		c.end()
		c.cut.Close()
		sub.Close()
		<-readerDone
	})
	return c
}

// end ends the case on the server and waits until it reports it ended.
func (c *tcase) end() {
	select {
	case <-c.ended:
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.r.ctl.Do(ctx, control.Request{Op: control.OpEndCase, Case: c.id}); err != nil {
		c.r.t.Errorf("end case: %v", err)
		return
	}
	select {
	case <-c.ended:
	case <-ctx.Done():
		c.r.t.Errorf("case %s did not end", c.id)
	}
}

// Events ends the case and returns everything the server said about it.
func (c *tcase) Events() []control.Event {
	c.end()
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]control.Event(nil), c.events...)
}

// wrap marker-wraps command for this case.
func (c *tcase) wrap(command string) string {
	s, err := markers.Wrap(c.id, c.r.srv.Ledger(), command)
	if err != nil {
		c.r.t.Fatal(err)
	}
	return s
}

// sshArgs are OpenSSH options that reach this case and nothing else.
func (c *tcase) sshArgs(port string) []string {
	return []string{"-F", "/dev/null", "-i", c.r.key, "-o", "IdentitiesOnly=yes",
		"-o", "UserKnownHostsFile=" + c.r.known, "-o", "StrictHostKeyChecking=yes",
		"-o", "BatchMode=yes", "-o", "LogLevel=ERROR", port, c.port}
}

// run runs a client program; it returns its combined output and exit code.
func run(t testing.TB, stdin string, name string, args ...string) (string, int) {
	t.Helper()
	testpeer.Need(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: did not end: %s", name, strings.Join(args, " "), out)
	}
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%s: %v", name, err)
		}
		code = ee.ExitCode()
	}
	return string(out), code
}

// ledger is the case's markers.
func (c *tcase) ledger() []markers.Entry {
	data, err := os.ReadFile(c.r.srv.Ledger())
	if err != nil {
		c.r.t.Fatal(err)
	}
	var out []markers.Entry
	for _, e := range markers.ParseBytes(data).Entries {
		if e.ID == c.id {
			out = append(out, e)
		}
	}
	return out
}

// checkRan checks the ledger holds one start and one complete with code.
func (c *tcase) checkRan(code int) {
	t := c.r.t
	t.Helper()
	l := c.ledger()
	if len(l) != 2 || l[0].Kind != markers.Start || l[1].Kind != markers.Complete || l[1].ExitCode != code {
		t.Errorf("ledger for %s: %+v, want one start and one complete(%d)", c.id, l, code)
	}
}

// steps renders the conversation as "name+" (accepted) or "name-" (refused).
func steps(events []control.Event) []string {
	var out []string
	for _, e := range events {
		if e.Kind == control.RequestSeen {
			mark := "+"
			if e.Accepted == nil || !*e.Accepted {
				mark = "-"
			}
			out = append(out, e.Request+mark)
		}
	}
	return out
}

// workload returns the case's workload event, failing if there is not one.
func workload(t testing.TB, events []control.Event) control.Event {
	t.Helper()
	var found []control.Event
	for _, e := range events {
		if e.Kind == control.Workload {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d workload events, want 1; conversation %v", len(found), steps(events))
	}
	return found[0]
}

// requestAt returns the Request event with the given sequence number.
func requestAt(events []control.Event, seq uint64) control.Event {
	for _, e := range events {
		if e.Seq == seq {
			return e
		}
	}
	return control.Event{}
}

// find returns the events of a kind.
func find(events []control.Event, kind control.EventKind) []control.Event {
	var out []control.Event
	for _, e := range events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// cutAndRelease arms c to cut its connection with kind at the holding moment
// and release the hold once the server saw its transport drop.
func (c *tcase) cutAndRelease(kind fault.Cut) {
	c.releaseHolds(func(ctx context.Context, e control.Event) {
		if _, err := c.cut.Cut(ctx, e.Conn, kind, e.Sent); err != nil {
			c.r.t.Errorf("cut: %v", err)
		}
		c.waitFor(ctx, func(x control.Event) bool { return x.Kind == control.TransportLost && x.Conn == e.Conn })
	})
}

// releaseHolds releases every hold of the case as soon as it is announced,
// after first (when not nil) has done what it does there.
func (c *tcase) releaseHolds(first func(context.Context, control.Event)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onHold = func(e control.Event) {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if first != nil {
				first(ctx, e)
			}
			if err := c.r.ctl.Do(ctx, control.Request{Op: control.OpRelease, Case: c.id, Seq: e.Seq}); err != nil {
				c.r.t.Errorf("release: %v", err)
			}
		}()
	}
}

// waitFor waits until an event matching ok has arrived; false when ctx
// ended first or the case ended without one.
func (c *tcase) waitFor(ctx context.Context, ok func(control.Event) bool) bool {
	for seen := 0; ; {
		c.mu.Lock()
		for _, e := range c.events[seen:] {
			if ok(e) {
				c.mu.Unlock()
				return true
			}
		}
		seen = len(c.events)
		arrived := c.arrived
		c.mu.Unlock()
		select {
		case <-arrived:
		case <-c.ended:
			// The reader appends CaseEnded before closing ended: one last
			// look covers it and anything before it.
			c.mu.Lock()
			found := slices.ContainsFunc(c.events[seen:], ok)
			c.mu.Unlock()
			return found
		case <-ctx.Done():
			return false
		}
	}
}

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
