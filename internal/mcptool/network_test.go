package mcptool

import (
	"strings"
	"testing"
)

// elsewhere is a network that runs fn where it is, for UseNetwork.
type elsewhere struct{}

func (elsewhere) Do(fn func() error) error { return fn() }

// A server at a URL runs outside the rig: it cannot be placed in the
// kernel network's tool namespace, and UseNetwork says so; a stdio server
// can.
func TestUseNetwork(t *testing.T) {
	web, err := New("mcp+http://127.0.0.1:1/mcp", Options{Tool: "ssh_exec"})
	if err != nil {
		t.Fatal(err)
	}
	if err := web.UseNetwork(elsewhere{}); err == nil || !strings.Contains(err.Error(), "use a stdio server") {
		t.Fatalf("a URL server on another network: %v", err)
	}
	if err := web.UseNetwork(nil); err != nil {
		t.Fatalf("a URL server on the rig's own network: %v", err)
	}
	stdio, err := New("mcp:true", Options{Tool: "ssh_exec"})
	if err != nil {
		t.Fatal(err)
	}
	if err := stdio.UseNetwork(elsewhere{}); err != nil {
		t.Fatalf("a stdio server on another network: %v", err)
	}
}
