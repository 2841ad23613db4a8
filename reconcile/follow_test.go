package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/internal/plainssh"
	"github.com/sshrig/sshrig/reconcile"
)

// followRig is a plain SSH server, a client of it and a ledger file the test
// appends to as wrapped commands would.
type followRig struct {
	client *gossh.Client
	ledger string
	f      *os.File
}

func newFollowRig(t *testing.T) *followRig {
	t.Helper()
	dir := t.TempDir()
	srv, err := plainssh.Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	client, err := gossh.Dial("tcp", srv.Addr, &gossh.ClientConfig{User: "t", Auth: []gossh.AuthMethod{gossh.PublicKeys(srv.Signer)},
		HostKeyCallback: gossh.FixedHostKey(srv.HostKey), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	r := &followRig{client: client, ledger: filepath.Join(dir, "it's the ledger")}
	if r.f, err = os.OpenFile(r.ledger, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.f.Close() })
	return r
}

// follow starts a follower of the rig's ledger, closed when the test ends,
// and a context for its readings.
func (r *followRig) follow(t *testing.T, timeout time.Duration) (context.Context, *reconcile.Follower) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	f, err := reconcile.Follow(ctx, r.client, r.ledger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return ctx, f
}

func (r *followRig) append(t *testing.T, s string) {
	t.Helper()
	if _, err := r.f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func lines(t *testing.T, f *reconcile.Follower, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := f.Lines(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range l.Entries {
		out = append(out, e.String())
	}
	for _, m := range l.Malformed {
		out = append(out, "malformed:"+m.Text)
	}
	return strings.Join(out, "|")
}

func TestFollowerReadsWhatTheLedgerGains(t *testing.T) {
	r := newFollowRig(t)
	r.append(t, "old start 1 2\n") // before the follower: never read
	ctx, f := r.follow(t, 10*time.Second)
	f.Watch("a")
	f.Watch("old")
	f.Watch("quiet")

	r.append(t, "a start 10 7\nb start 11 8\n")
	if got := lines(t, f, "a"); got != "a start 10 7" {
		t.Fatalf("a: %q", got)
	}
	if got := lines(t, f, "old"); got != "" {
		t.Fatalf("old: %q, want nothing: it was there before the follower", got)
	}
	if _, err := f.Lines(ctx, "b"); err == nil {
		t.Fatal("b is not watched, but Lines answered for it")
	}

	// A line written in two parts, read in between: the part is kept
	// until its newline arrives, then filed whole.
	r.append(t, "a complete 3 ")
	if got := lines(t, f, "a"); got != "a start 10 7" {
		t.Fatalf("a with a half line: %q", got)
	}
	r.append(t, "- 7\n")
	if got := lines(t, f, "a"); got != "a start 10 7|a complete 3 - 7" {
		t.Fatalf("a after the half line ended: %q", got)
	}

	// Garbage under a watched id is kept, for the parser to report.
	r.append(t, "a start garbage\n")
	if got := lines(t, f, "a"); !strings.HasSuffix(got, "|malformed:a start garbage") {
		t.Fatalf("a with garbage: %q", got)
	}
	if got := lines(t, f, "quiet"); got != "" {
		t.Fatalf("quiet: %q", got)
	}

	f.Forget("a")
	if _, err := f.Lines(ctx, "a"); err == nil {
		t.Fatal("a was forgotten, but Lines answered for it")
	}
}

// TestFollowerKeepsOnlyWatchedLines: a ledger of many other ids costs the
// follower nothing it keeps, and one reading reads them all.
func TestFollowerKeepsOnlyWatchedLines(t *testing.T) {
	r := newFollowRig(t)
	_, f := r.follow(t, 30*time.Second)
	f.Watch("mine")
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "other-%d start %d %d\n", i, 1700000000+i, i+1)
		if i == 2500 {
			b.WriteString("mine start - 99\n")
		}
	}
	r.append(t, b.String())
	if got := lines(t, f, "mine"); got != "mine start - 99" {
		t.Fatalf("mine: %q", got)
	}
}

func TestFollowerBrokenStaysBroken(t *testing.T) {
	r := newFollowRig(t)
	ctx, f := r.follow(t, 10*time.Second)
	f.Watch("a")
	r.client.Close()
	if _, err := f.Lines(ctx, "a"); err == nil {
		t.Fatal("a reading over a closed connection succeeded")
	}
	r.append(t, "a start 1 2\n")
	if _, err := f.Lines(ctx, "a"); err == nil {
		t.Fatal("a broken follower answered")
	}
	f.Close()
}

func TestFollowNoLedger(t *testing.T) {
	r := newFollowRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if f, err := reconcile.Follow(ctx, r.client, r.ledger+".missing"); err == nil {
		f.Close()
		t.Fatal("following a ledger that does not exist succeeded")
	}
}

// TestFollowerLongLines: a line longer than any ledger line, whole or left
// unfinished across readings, is kept as far as the parser needs to report
// it, and the follower goes on reading what comes after it.
func TestFollowerLongLines(t *testing.T) {
	r := newFollowRig(t)
	_, f := r.follow(t, 30*time.Second)
	f.Watch("a")
	huge := "a start " + strings.Repeat("9", 200<<10) // beyond the follower's buffer too
	r.append(t, huge+"\na start 1 2\n")
	got := lines(t, f, "a")
	if !strings.HasPrefix(got, "a start 1 2|malformed:a start 999") { // entries first, then malformed lines
		t.Fatalf("a: %.120q…", got)
	}
	f.Forget("a")
	f.Watch("b")
	r.append(t, "b start "+strings.Repeat("7", 100<<10)) // no newline yet
	if got := lines(t, f, "b"); got != "" {
		t.Fatalf("b before its newline: %.120q", got)
	}
	r.append(t, "7\nb complete 0 1 2\n")
	got = lines(t, f, "b")
	if !strings.HasPrefix(got, "b complete 0 1 2|malformed:b start 777") {
		t.Fatalf("b: %.120q…", got)
	}
}

func TestFollowerCloseTwice(t *testing.T) {
	r := newFollowRig(t)
	ctx, f := r.follow(t, 10*time.Second)
	if err := f.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	f.Watch("a")
	if _, err := f.Lines(ctx, "a"); err == nil {
		t.Fatal("a closed follower answered")
	}
}
