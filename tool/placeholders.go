package tool

import (
	"strconv"
	"strings"
)

// Placeholders are the names a command template (`exec:` tools) or an MCP
// arguments template may use as {name}, in the order they are documented
// (docs/tool-contract.md): each stands for one field of the Target.
var Placeholders = []string{"addr", "host", "port", "user", "identity", "known_hosts", "command",
	"correlation_id", "operation", "deadline_ms", "deadline_s", "jump", "hosts"}

// Placeholder is the value of the named placeholder for t, and whether the
// name is one of Placeholders. deadline_s is the deadline in whole seconds,
// rounded up (for options such as OpenSSH's ConnectTimeout).
func (t Target) Placeholder(name string) (string, bool) {
	switch name {
	case "addr":
		return t.Addr, true
	case "host":
		return t.Host(), true
	case "port":
		return strconv.Itoa(t.Port()), true
	case "user":
		return t.User, true
	case "identity":
		return t.Identity, true
	case "known_hosts":
		return t.KnownHosts, true
	case "command":
		return t.Command, true
	case "correlation_id":
		return t.CorrelationID, true
	case "operation":
		return t.Operation, true
	case "deadline_ms":
		return strconv.FormatInt(t.Deadline.Milliseconds(), 10), true
	case "jump":
		return t.Jump, true
	case "hosts":
		return strings.Join(t.Hosts, " "), true
	case "deadline_s":
		s := (t.Deadline.Milliseconds() + 999) / 1000
		return strconv.FormatInt(max(s, 1), 10), true
	}
	return "", false
}

// Fill replaces every {name} of Placeholders in s by its value for t, as
// plain text; braces around any other text are left as they are.
func (t Target) Fill(s string) string {
	if !strings.Contains(s, "{") {
		return s
	}
	pairs := make([]string, 0, 2*len(Placeholders))
	for _, name := range Placeholders {
		v, _ := t.Placeholder(name)
		pairs = append(pairs, "{"+name+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}
