package mcptool

import (
	"encoding/json"
	"fmt"
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
// {port}, {deadline_ms} and {deadline_s} are numbers and may stand alone.
//
// DefaultArgs also passes "jump" (SSHRIG_JUMP) in a run with a jump host
// and "hosts" (SSHRIG_HOSTS) in a run on a fleet: only there, so that a
// server whose schema forbids arguments it does not know still gets the
// ten it gets in every other run.
type Args struct {
	text   string
	byRole bool // DefaultArgs: jump and hosts where the run has them
}

// ParseArgs checks a template: with every placeholder filled it must be a
// JSON object. "" is DefaultArgs.
func ParseArgs(text string) (Args, error) {
	if text == "" {
		text = DefaultArgs
	}
	a := Args{text: text, byRole: text == DefaultArgs}
	sample := tool.Target{Addr: "127.0.0.1:22", User: "u", Identity: "/k", KnownHosts: "/kh", Command: `echo "x"`,
		CorrelationID: "c", Operation: "op", Deadline: 1000}
	if _, err := a.Fill(sample); err != nil {
		return Args{}, err
	}
	return a, nil
}

// Fill substitutes t into the template.
func (a Args) Fill(t tool.Target) (map[string]any, error) {
	pairs := make([]string, 0, 2*len(tool.Placeholders))
	for _, name := range tool.Placeholders {
		s, _ := t.Placeholder(name)
		if name != "port" && name != "deadline_ms" && name != "deadline_s" {
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
	if a.byRole {
		if t.Jump != "" {
			out["jump"] = t.Jump
		}
		if len(t.Hosts) > 0 {
			out["hosts"], _ = t.Placeholder("hosts")
		}
	}
	return out, nil
}
