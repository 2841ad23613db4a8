package containers

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// execIn runs a command in the container and fails the test unless it
// succeeds.
func execIn(t *testing.T, cli *testcontainers.DockerClient, id string, cmd ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ex, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	att, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	stdcopy.StdCopy(&out, &out, att.Reader)
	att.Close()
	if out.Len() > 0 {
		t.Fatalf("%v: %s", cmd, out.String())
	}
}

// The out-of-band reading returns the file byte for byte, whatever its
// size and ending, survives callers that give up mid-read, and falls back
// to one-shot execs when its shell is gone.
func TestLedgerReader(t *testing.T) {
	needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := newLauncher(t)
	ep, err := l.Launch(ctx, []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Stop()
	cli := testClient(t)
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{Filters: labelFilter(LabelRun + "=" + l.ID())})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("the container: %v", err)
	}
	id := list.Items[0].ID
	const file = "/tmp/ledger-test"
	r := newLedgerReader(cli, id, file)
	if err := r.start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	if _, err := r.Read(ctx); err == nil || !strings.Contains(err.Error(), "exit code 1") {
		t.Errorf("a missing file: %v, want cat's failure", err)
	}
	want := ""
	for i, step := range []struct{ script, adds string }{
		{`printf 'a start 1 2\n'`, "a start 1 2\n"},
		{`printf 'a complete 0 3 4'`, "a complete 0 3 4"}, // no newline at the end
		{`i=0; while [ $i -lt 20000 ]; do echo 'b start 5 6'; i=$((i+1)); done`, strings.Repeat("b start 5 6\n", 20000)},
		{`printf '\n\n--sshrig-ledger-lookalike-- 1 0\n'`, "\n\n--sshrig-ledger-lookalike-- 1 0\n"},
	} {
		want += step.adds
		execIn(t, cli, id, "/bin/sh", "-c", "{ "+step.script+"; } >> "+file)
		got, err := r.Read(ctx)
		if err != nil || string(got) != want {
			t.Fatalf("read %d: %d bytes, %v; want %d bytes", i, len(got), err, len(want))
		}
	}
	// A caller that gives up: its answer must not reach the next caller.
	gone, giveUp := context.WithCancel(ctx)
	giveUp()
	if _, err := r.Read(gone); err == nil {
		t.Error("a read with a cancelled context succeeded")
	}
	execIn(t, cli, id, "/bin/sh", "-c", "echo c start 7 8 >> "+file)
	want += "c start 7 8\n"
	if got, err := r.Read(ctx); err != nil || string(got) != want {
		t.Fatalf("after a cancelled read: %d bytes, %v; want %d", len(got), err, len(want))
	}
	// The shell dies: reads go on, one exec each.
	r.att.Conn.Close()
	if got, err := r.Read(ctx); err != nil || string(got) != want {
		t.Fatalf("after the shell died: %d bytes, %v", len(got), err)
	}
	if r.att != nil {
		t.Error("the reader still uses its dead shell")
	}
	if got, err := readFile(ctx, cli, id, file); err != nil || string(got) != want {
		t.Fatalf("one-shot exec: %d bytes, %v", len(got), err)
	}
}
