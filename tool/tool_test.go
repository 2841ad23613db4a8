package tool

import (
	"strings"
	"testing"
	"time"
)

func TestEnvironRoundTrip(t *testing.T) {
	want := Target{Addr: "127.0.0.1:2222", User: "u", Identity: "/k", Certificate: "/k-cert.pub", KnownHosts: "/kh",
		CorrelationID: "c-1", Operation: "op", Command: "echo 'x'\nexit 3", Deadline: 1500 * time.Millisecond,
		Lookup: "cat r", FollowUp: "note {id}", Reconcile: "SSHRIG_CORRELATION_ID='c-1'; exec /bin/sh -c 'probe'"}
	env := map[string]string{}
	for _, kv := range want.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if env["SSHRIG_HOST"] != "127.0.0.1" || env["SSHRIG_PORT"] != "2222" {
		t.Fatalf("host/port: %v", env)
	}
	got, err := FromEnv(func(k string) string { return env[k] })
	if err != nil || got != want {
		t.Fatalf("FromEnv = %+v, %v; want %+v", got, err, want)
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
}
