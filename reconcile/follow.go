package reconcile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	gossh "golang.org/x/crypto/ssh"

	"github.com/sshrig/sshrig/markers"
)

// Follower reads a ledger over SSH as it grows: one shell session on the
// target holds the ledger open, and each time it is asked prints the lines
// appended since it was last asked, with builtins only. A reading then costs
// one round trip on a session that is already open, instead of a session, a
// shell and a grep; and it reads only what is new, so a long run's growing
// ledger costs no more per reading than a short one's.
//
// It keeps the lines of the ids it is told to watch ([Follower.Watch]) until
// they are forgotten ([Follower.Forget]) and drops every other line as it
// passes, so its memory is bounded by the ids in flight.
//
// The shell reads the ledger with read -r, which cannot carry a NUL byte: a
// line holding one (never a marker: ids cannot) reaches the parser without
// it, still malformed. It follows the file it opened, not the path: a ledger
// removed and made anew, or truncated, is no longer followed, and the case's
// truth then disagrees with the ledger read out of band or with the server's
// process events, so it is inconclusive rather than wrong.
type Follower struct {
	mu      sync.Mutex
	sess    *gossh.Session
	stdin   io.WriteCloser
	out     *bufio.Reader
	asked   uint64
	partial []byte            // the ledger's last line, not yet ended by a newline
	lines   map[string][]byte // the watched ids' lines, each with its newline
	err     error             // once set, every reading fails with it
}

// followScript is the shell program of the follower's session. For every
// line it reads on stdin (a request number) it prints each whole ledger line
// appended since the last request as "L LINE", a last line not yet ended by a
// newline as "P TEXT" (its bytes are consumed: the reader keeps them and
// prepends them to what follows), and then "E NUMBER". $1 is the ledger.
const followScript = `exec 3<"$1" || exit 1
while read -r sshrig_req; do
while IFS= read -r sshrig_l <&3; do printf 'L %s\n' "$sshrig_l"; done
[ -z "$sshrig_l" ] || printf 'P %s\n' "$sshrig_l"
printf 'E %s\n' "$sshrig_req"
done`

// Follow opens the follower's session on client for the ledger at path.
func Follow(ctx context.Context, client *gossh.Client, path string) (*Follower, error) {
	sess, err := client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("reconcile: follow the ledger: open session: %w", err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("reconcile: follow the ledger: %w", err)
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("reconcile: follow the ledger: %w", err)
	}
	cmd := "/bin/sh -c " + markers.Quote(followScript) + " sshrig-follow " + markers.Quote(path)
	if err := sess.Start(cmd); err != nil {
		sess.Close()
		return nil, fmt.Errorf("reconcile: follow the ledger: %w", err)
	}
	f := &Follower{sess: sess, stdin: stdin, out: bufio.NewReaderSize(stdout, 64<<10), lines: map[string][]byte{}}
	// A first reading proves the ledger is open and skips what was there.
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.catchUp(ctx); err != nil {
		f.closeLocked()
		return nil, err
	}
	return f, nil
}

// Watch starts keeping id's lines from the next reading on. Lines of id
// already read past are not recovered: watch an id before its command can
// run.
func (f *Follower) Watch(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.lines[id]; !ok {
		f.lines[id] = []byte{}
	}
}

// Forget stops keeping id's lines and drops those kept.
func (f *Follower) Forget(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.lines, id)
}

// Lines reads what the ledger gained and returns the lines of id, a watched
// id, as a parsed ledger (line numbers count id's lines only). An error
// means the session broke; the follower then stays broken.
func (f *Follower) Lines(ctx context.Context, id string) (*markers.Ledger, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.catchUp(ctx); err != nil {
		return nil, err
	}
	kept, ok := f.lines[id]
	if !ok {
		return nil, fmt.Errorf("reconcile: follow the ledger: %s is not watched", id)
	}
	return markers.ParseBytes(kept), nil
}

// catchUp asks for what the ledger gained and files it; the caller holds mu.
func (f *Follower) catchUp(ctx context.Context) error {
	if f.err != nil {
		return f.err
	}
	stop := context.AfterFunc(ctx, func() { f.sess.Close() })
	defer stop()
	f.err = f.read()
	if f.err != nil && ctx.Err() != nil {
		f.err = fmt.Errorf("reconcile: follow the ledger: %w", ctx.Err())
	}
	return f.err
}

func (f *Follower) read() error {
	f.asked++
	want := strconv.FormatUint(f.asked, 10)
	if _, err := io.WriteString(f.stdin, want+"\n"); err != nil {
		return fmt.Errorf("reconcile: follow the ledger: ask: %w", err)
	}
	for {
		line, err := f.out.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// An overlong line: the parser rejects it anyway; keep its
			// start (copied: the reads that skip the rest refill the
			// buffer it lies in) so it is still reported.
			start := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = f.out.ReadSlice('\n')
			}
			line = append(start, '\n')
		}
		if err != nil {
			return fmt.Errorf("reconcile: follow the ledger: the session ended: %w", err)
		}
		line = line[:len(line)-1]
		if len(line) < 2 || line[1] != ' ' {
			return fmt.Errorf("reconcile: follow the ledger: unexpected output %q", line)
		}
		text := line[2:]
		switch line[0] {
		case 'L':
			f.file(text)
		case 'P':
			// Past a line's longest, more of it changes nothing: the
			// parser reports it too long either way.
			f.partial = append(f.partial, text[:min(len(text), maxPartial-len(f.partial))]...)
		case 'E':
			if string(text) == want {
				return nil
			}
			return fmt.Errorf("reconcile: follow the ledger: answer %q to request %s", text, want)
		default:
			return fmt.Errorf("reconcile: follow the ledger: unexpected output %q", line)
		}
	}
}

// maxPartial bounds the unfinished last line kept between readings: one
// byte more than a ledger line may be.
const maxPartial = markers.MaxLineLen + 1

// file keeps a whole ledger line if its first field is a watched id.
func (f *Follower) file(text []byte) {
	if len(f.partial) > 0 {
		text = append(f.partial, text...)
		f.partial = nil
	}
	id, _, _ := bytes.Cut(text, []byte(" "))
	if kept, ok := f.lines[string(id)]; ok {
		kept = append(kept, text...)
		f.lines[string(id)] = append(kept, '\n')
	}
}

// Close ends the session; a reading under way fails. It is safe to call
// more than once.
func (f *Follower) Close() error {
	// Closing the session first ends a reading that holds mu.
	err := f.sess.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closeLocked()
	if errors.Is(err, io.EOF) {
		err = nil // closed before
	}
	return err
}

func (f *Follower) closeLocked() {
	if f.err == nil {
		f.err = errors.New("reconcile: follow the ledger: closed")
	}
	f.stdin.Close()
	f.sess.Close()
}
