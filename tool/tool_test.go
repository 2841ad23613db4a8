package tool

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEnvironRoundTrip(t *testing.T) {
	want := Target{Addr: "127.0.0.1:2222", User: "u", Identity: "/k", Certificate: "/k-cert.pub", KnownHosts: "/kh",
		CorrelationID: "c-1", Operation: "op", Command: "echo 'x'\nexit 3", Deadline: 1500 * time.Millisecond,
		Lookup: "cat r", FollowUp: "note {id}", Reconcile: "SSHRIG_CORRELATION_ID='c-1'; exec /bin/sh -c 'probe'", Jump: "u@127.0.0.1:2200",
		Hosts: []string{"127.0.0.1:2201", "127.0.0.1:2202"}}
	env := map[string]string{}
	for _, kv := range want.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if env["SSHRIG_HOST"] != "127.0.0.1" || env["SSHRIG_PORT"] != "2222" {
		t.Fatalf("host/port: %v", env)
	}
	got, err := FromEnv(func(k string) string { return env[k] })
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("FromEnv = %+v, %v; want %+v", got, err, want)
	}
	if env["SSHRIG_HOSTS"] != "127.0.0.1:2201 127.0.0.1:2202" {
		t.Errorf("SSHRIG_HOSTS=%q", env["SSHRIG_HOSTS"])
	}
	delete(env, "SSHRIG_USER")
	env["SSHRIG_DEADLINE_MS"] = "soon"
	if _, err := FromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "SSHRIG_USER") {
		t.Fatalf("missing user: %v", err)
	}
	env["SSHRIG_USER"] = "u"
	if _, err := FromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "SSHRIG_DEADLINE_MS") {
		t.Fatalf("bad deadline: %v", err)
	}
	env["SSHRIG_DEADLINE_MS"] = "1500"
	for _, bad := range []string{"127.0.0.1:2200", "u@127.0.0.1", "@127.0.0.1:2200"} {
		env["SSHRIG_JUMP"] = bad
		if _, err := FromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "SSHRIG_JUMP") {
			t.Errorf("SSHRIG_JUMP=%q: %v, want an error naming it", bad, err)
		}
	}
	if got.JumpUser() != "u" || got.JumpAddr() != "127.0.0.1:2200" {
		t.Errorf("jump user %q, address %q", got.JumpUser(), got.JumpAddr())
	}
}
