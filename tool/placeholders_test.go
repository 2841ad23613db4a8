package tool

import (
	"testing"
	"time"
)

func TestPlaceholders(t *testing.T) {
	tg := Target{Addr: "127.0.0.1:2222", User: "u", Identity: "/k", KnownHosts: "/kh", Command: "c",
		CorrelationID: "id", Operation: "op", Deadline: 1001 * time.Millisecond}
	want := map[string]string{"addr": "127.0.0.1:2222", "host": "127.0.0.1", "port": "2222", "user": "u",
		"identity": "/k", "known_hosts": "/kh", "command": "c", "correlation_id": "id", "operation": "op",
		"deadline_ms": "1001", "deadline_s": "2"}
	for _, name := range Placeholders {
		got, ok := tg.Placeholder(name)
		if !ok || got != want[name] {
			t.Errorf("{%s} = %q, %t; want %q", name, got, ok, want[name])
		}
		delete(want, name)
	}
	if len(want) != 0 {
		t.Errorf("not in Placeholders: %v", want)
	}
	if _, ok := tg.Placeholder("nope"); ok {
		t.Error("{nope} is a placeholder")
	}
	if got := tg.Fill("{user}@{host} {nope}"); got != "u@127.0.0.1 {nope}" {
		t.Errorf("Fill = %q", got)
	}
}
