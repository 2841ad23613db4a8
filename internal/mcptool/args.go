package mcptool

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/sshrig/sshrig/tool"
)

// DefaultArgs is the arguments template used when none is given: every field
// of the target, named as in docs/tool-contract.md.
const DefaultArgs = `{"addr": "{addr}", "host": "{host}", "port": {port}, "user": "{user}",` +
	` "identity": "{identity}", "known_hosts": "{known_hosts}", "command": "{command}",` +
	` "correlation_id": "{correlation_id}", "operation": "{operation}", "deadline_ms": {deadline_ms}}`

// Args is a tools/call arguments template: a JSON object in which the
// placeholders are replaced by the case's target. A string placeholder is
// replaced by its JSON-escaped text, so it belongs inside a JSON string;
// {port} and {deadline_ms} are numbers and may stand alone.
type Args struct{ text string }

// placeholders in the order they are documented.
var placeholders = []string{"addr", "host", "port", "user", "identity", "known_hosts", "command", "correlation_id", "operation", "deadline_ms"}

func values(t tool.Target) map[string]string {
	return map[string]string{
		"addr": t.Addr, "host": t.Host(), "port": strconv.Itoa(t.Port()), "user": t.User,
		"identity": t.Identity, "known_hosts": t.KnownHosts, "command": t.Command,
		"correlation_id": t.CorrelationID, "operation": t.Operation,
		"deadline_ms": strconv.FormatInt(t.Deadline.Milliseconds(), 10),
	}
}

// ParseArgs checks a template: with every placeholder filled it must be a
// JSON object. "" is DefaultArgs.
func ParseArgs(text string) (Args, error) {
	if text == "" {
		text = DefaultArgs
	}
	a := Args{text: text}
	sample := tool.Target{Addr: "127.0.0.1:22", User: "u", Identity: "/k", KnownHosts: "/kh", Command: `echo "x"`,
		CorrelationID: "c", Operation: "op", Deadline: 1000}
	if _, err := a.Fill(sample); err != nil {
		return Args{}, err
	}
	return a, nil
}

// Fill substitutes t into the template.
func (a Args) Fill(t tool.Target) (map[string]any, error) {
	v := values(t)
	pairs := make([]string, 0, 2*len(placeholders))
	for _, name := range placeholders {
		s := v[name]
		if name != "port" && name != "deadline_ms" {
			b, _ := json.Marshal(s)
			s = string(b[1 : len(b)-1])
		}
		pairs = append(pairs, "{"+name+"}", s)
	}
	filled := strings.NewReplacer(pairs...).Replace(a.text)
	var out map[string]any
	if err := json.Unmarshal([]byte(filled), &out); err != nil {
		return nil, fmt.Errorf("mcptool: arguments template %q is not a JSON object once filled: %v", a.text, err)
	}
	if out == nil {
		return nil, fmt.Errorf("mcptool: arguments template %q is not a JSON object once filled", a.text)
	}
	return out, nil
}
