package containers

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// ledgerReader reads the ledger out of band: through a docker exec'd shell
// inside the container that cats the file on request — a process of the
// container's own, not the SSH server, reading the very file the server
// writes.
//
// Why not copy the file out with the archive API (docker cp)? The engine
// reads the container's root file system from the host side, and /scratch
// is a tmpfs that exists only inside the container: the copy finds nothing.
// And one `docker exec cat` per read costs 100–250 ms here (runc starts a
// process each time), which would double the matrix's time; the long-lived
// shell answers a read in a few milliseconds. Should it die, each read
// falls back to a one-shot exec.
type ledgerReader struct {
	cli  *testcontainers.DockerClient
	id   string // container
	path string

	mu       sync.Mutex // one request at a time
	seq      int
	att      *client.HijackedResponse
	replies  chan ledgerReply
	done     chan struct{} // the reading goroutines ended
	sentinel string
	stderr   lockedBuffer
}

type ledgerReply struct {
	seq  int
	code int
	data []byte
}

// The shell reads a request number per line and answers with the file, a
// newline, and a sentinel line carrying the number and cat's exit status.
const ledgerScript = `while read -r n; do cat "$1"; printf '\n%s %s %d\n' "$2" "$n" $?; done`

func newLedgerReader(cli *testcontainers.DockerClient, id, path string) *ledgerReader {
	b := make([]byte, 8)
	rand.Read(b)
	return &ledgerReader{cli: cli, id: id, path: path, sentinel: "--sshrig-ledger-" + hex.EncodeToString(b) + "--"}
}

// start starts the shell; a failure leaves the reader on one-shot execs.
func (r *ledgerReader) start(ctx context.Context) error {
	ex, err := r.cli.ExecCreate(ctx, r.id, client.ExecCreateOptions{
		Cmd:         []string{"/bin/sh", "-c", ledgerScript, "sshrig-ledger", r.path, r.sentinel},
		AttachStdin: true, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return err
	}
	att, err := r.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return err
	}
	r.att = &att.HijackedResponse
	r.replies = make(chan ledgerReply, 16)
	r.done = make(chan struct{})
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := stdcopy.StdCopy(pw, &r.stderr, att.Reader)
		pw.CloseWithError(err)
	})
	wg.Go(func() {
		defer close(r.replies)
		br := bufio.NewReader(pr)
		var acc []byte
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				pr.CloseWithError(err)
				return
			}
			if rest, ok := bytes.CutPrefix(line, []byte(r.sentinel+" ")); ok {
				f := strings.Fields(string(rest))
				if len(f) == 2 {
					seq, _ := strconv.Atoi(f[0])
					code, _ := strconv.Atoi(f[1])
					data := bytes.TrimSuffix(acc, []byte("\n"))
					select {
					case r.replies <- ledgerReply{seq: seq, code: code, data: data}:
					default: // nobody will ask for it any more
					}
					acc = nil
					continue
				}
			}
			acc = append(acc, line...)
		}
	})
	go func() { wg.Wait(); close(r.done) }()
	return nil
}

// Read returns the file's content now.
func (r *ledgerReader) Read(ctx context.Context) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.att == nil {
		return readFile(ctx, r.cli, r.id, r.path)
	}
	r.seq++
	seq := r.seq
	if _, err := fmt.Fprintf(r.att.Conn, "%d\n", seq); err != nil {
		r.closeLocked()
		return readFile(ctx, r.cli, r.id, r.path)
	}
	for {
		select {
		case rep, ok := <-r.replies:
			if !ok {
				r.closeLocked()
				return readFile(ctx, r.cli, r.id, r.path)
			}
			if rep.seq != seq {
				continue // the answer to a request whose caller gave up
			}
			if rep.code != 0 {
				return nil, fmt.Errorf("cat %s in the container: exit code %d: %s", r.path, rep.code, lastLine(r.stderr.String()))
			}
			return rep.data, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("reading %s in the container: %w", r.path, ctx.Err())
		}
	}
}

// reopen starts the shell anew, in a container that restarted: the old
// one died with it. A failure leaves the reader on one-shot execs.
func (r *ledgerReader) reopen(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeLocked()
	return r.start(ctx)
}

// Close ends the shell and waits for the reading goroutines.
func (r *ledgerReader) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeLocked()
}

func (r *ledgerReader) closeLocked() {
	if r.att == nil {
		return
	}
	r.att.Close()
	<-r.done
	r.att = nil
}

// readFile reads a file inside the container with a one-shot docker exec.
func readFile(ctx context.Context, cli *testcontainers.DockerClient, id, path string) ([]byte, error) {
	fail := func(err error) ([]byte, error) { return nil, fmt.Errorf("docker exec cat %s: %w", path, err) }
	ex, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"cat", path}, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return fail(err)
	}
	att, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return fail(err)
	}
	var stdout, stderr bytes.Buffer
	_, err = stdcopy.StdCopy(&stdout, &stderr, att.Reader)
	att.Close()
	if err != nil {
		return fail(err)
	}
	// The stream ends when the process does, but the engine records its
	// exit a moment later: ask again, backing off from 1ms.
	for delay := time.Millisecond; ; delay *= 2 {
		st, err := cli.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
		if err != nil {
			return fail(err)
		}
		if !st.Running {
			if st.ExitCode != 0 {
				return fail(fmt.Errorf("exit code %d: %s", st.ExitCode, strings.TrimSpace(stderr.String())))
			}
			return stdout.Bytes(), nil
		}
		select {
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-time.After(delay):
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
