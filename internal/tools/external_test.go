package tools

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/sshrig/sshrig/tool"
)

// A command template fills each placeholder within its own argument, so a
// command with spaces, quotes and a newline reaches the program as one
// argument, as OpenSSH's ssh needs it.
func TestExternalTemplate(t *testing.T) {
	e, err := ParseExternal(`exec:printf '[%s]' -p {port} {user}@{host} {command} {deadline_s} '{not_a_placeholder}'`)
	if err != nil {
		t.Fatal(err)
	}
	target := tool.Target{Addr: "127.0.0.1:2222", User: "rig", Command: "echo 'a b'\nexit 3", Deadline: 4500 * time.Millisecond}
	var out, errOut bytes.Buffer
	exit := e.RunProcess(context.Background(), target, &out, &errOut, nil)
	if exit.ExitCode != 0 {
		t.Fatalf("exit %+v, stderr %s", exit, errOut.String())
	}
	want := "[-p][2222][rig@127.0.0.1][echo 'a b'\nexit 3][5][{not_a_placeholder}]"
	if out.String() != want {
		t.Errorf("argv = %q, want %q", out.String(), want)
	}
}
