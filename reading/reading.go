package reading

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/theory/jsonpath"

	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// Kind is the kind of tool a reading reads.
type Kind string

// The kinds of tool.
const (
	Exec Kind = "exec" // a program: its exit code, signal, stdout and stderr
	MCP  Kind = "mcp"  // an MCP tool call: isError, structuredContent, text content
)

// Report is what a tool said, in its own terms.
type Report struct {
	// Exited is true when the program exited (ExitCode is its code); false
	// when a signal ended it (Signal names it) or it never started.
	Exited   bool
	ExitCode int
	// Signal is the signal that ended the program, as Go names it
	// ("killed", "terminated") or as its short name ("KILL", "SIGTERM"):
	// both are accepted by a rule's signal condition.
	Signal string
	Stdout []byte
	Stderr []byte
	// MCP is the answer of an MCP tool call; nil for a program.
	MCP *tool.CallResult
}

// Reading is a loaded reading: its rules in the order they are tried.
type Reading struct {
	Name  string
	Kind  Kind
	File  string // where it was loaded from; "builtin:NAME" for a built-in
	Rules []Rule
}

// Rule maps the reports its conditions match to a category and retry.
type Rule struct {
	// Name is the native value the rule stands for, as the ambiguity table
	// shows it (e.g. "exit 255: Connection reset by peer").
	Name     string
	Line     int // the rule's line in its file
	Category result.Category
	Retry    result.Retry

	exit       []int
	signal     string // "" no condition; "any" any signal
	stdout     *regexp.Regexp
	stderr     *regexp.Regexp
	text       *regexp.Regexp
	isError    *bool
	json       []pathCond // on stdout, decoded as one JSON value
	structured []pathCond // on MCPAnswer.Structured
}

// pathCond holds when some node the path selects equals the value, matches
// the pattern, or (with neither) when the path selects anything.
type pathCond struct {
	path    *jsonpath.Path
	equals  any
	compare bool // equals was given (it may be null)
	matches *regexp.Regexp
}

// Outcome is what a reading made of a report.
type Outcome struct {
	Rule     string // the matched rule's name: the report's native value
	Category result.Category
	Retry    result.Retry
}

// Result is the outcome as the result contract's object, for the tool's
// operation and correlation id (which the tool itself may not echo).
func (o Outcome) Result(operation, correlationID string) result.Result {
	return result.Result{OK: o.Category == result.Succeeded, Category: o.Category, Retry: o.Retry,
		Operation: operation, CorrelationID: correlationID, Message: "read by rule " + strconv.Quote(o.Rule)}
}

// ErrUnread means no rule of the reading matched the report: the rig does
// not guess what the tool meant.
var ErrUnread = errors.New("reading: no rule matches the tool's report")

// Read applies the rules in order and returns the first match's outcome, or
// an error wrapping ErrUnread that describes the report.
func (r *Reading) Read(rep Report) (Outcome, error) {
	var doc any
	decoded := false
	for _, rule := range r.Rules {
		if len(rule.json) > 0 && !decoded {
			doc, decoded = decodeJSON(rep.Stdout), true
		}
		if rule.matches(rep, doc) {
			return Outcome{Rule: rule.Name, Category: rule.Category, Retry: rule.Retry}, nil
		}
	}
	return Outcome{}, fmt.Errorf("%w (reading %s): %s", ErrUnread, r.Name, Describe(rep))
}

// Describe names a report's native signal in a few words, for messages.
func Describe(rep Report) string {
	var parts []string
	if rep.MCP != nil {
		parts = append(parts, fmt.Sprintf("isError %t", rep.MCP.IsError))
		if t := firstLine(rep.MCP.Text); t != "" {
			parts = append(parts, "text "+strconv.Quote(t))
		}
		return strings.Join(parts, ", ")
	}
	switch {
	case rep.Exited:
		parts = append(parts, fmt.Sprintf("exit %d", rep.ExitCode))
	case rep.Signal != "":
		parts = append(parts, "signal "+rep.Signal)
	default:
		parts = append(parts, "no exit")
	}
	if e := lastLine(string(rep.Stderr)); e != "" {
		parts = append(parts, "stderr "+strconv.Quote(e))
	}
	return strings.Join(parts, ", ")
}

func (rule *Rule) matches(rep Report, doc any) bool {
	if rule.exit != nil && (!rep.Exited || !containsInt(rule.exit, rep.ExitCode)) {
		return false
	}
	if rule.signal != "" && !signalIs(rep.Signal, rule.signal) {
		return false
	}
	if rule.stdout != nil && !rule.stdout.Match(rep.Stdout) {
		return false
	}
	if rule.stderr != nil && !rule.stderr.Match(rep.Stderr) {
		return false
	}
	for _, c := range rule.json {
		if doc == nil || !c.holds(doc) {
			return false
		}
	}
	if rule.isError != nil || rule.text != nil || len(rule.structured) > 0 {
		if rep.MCP == nil {
			return false
		}
		if rule.isError != nil && rep.MCP.IsError != *rule.isError {
			return false
		}
		if rule.text != nil && !rule.text.MatchString(rep.MCP.Text) {
			return false
		}
		for _, c := range rule.structured {
			if rep.MCP.Structured == nil || !c.holds(rep.MCP.Structured) {
				return false
			}
		}
	}
	return true
}

func (c pathCond) holds(doc any) bool {
	nodes := c.path.Select(doc)
	if !c.compare && c.matches == nil {
		return len(nodes) > 0
	}
	for _, n := range nodes {
		if c.compare && reflect.DeepEqual(normal(n), c.equals) {
			return true
		}
		if c.matches != nil {
			if s, ok := scalarText(n); ok && c.matches.MatchString(s) {
				return true
			}
		}
	}
	return false
}

// decodeJSON decodes stdout as one JSON value; nil when it is not one.
// Only the value is read: a tool that prints a line of prose before its
// JSON does not match a json condition.
func decodeJSON(b []byte) any {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	if _, err := dec.Token(); err == nil {
		return nil // trailing data
	}
	return normal(v)
}

// normal brings a decoded value (from JSON or YAML) to one form, so equal
// values compare equal: numbers as float64, maps as map[string]any.
func normal(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return x.String()
		}
		return f
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float32:
		return float64(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normal(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normal(e)
		}
		return out
	}
	return v
}

func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// signalIs compares a reported signal with a rule's: "any" matches every
// signal; otherwise names compare without case and without a SIG prefix,
// and Go's descriptions ("killed") count as their short names.
func signalIs(got, want string) bool {
	if got == "" {
		return false
	}
	if want == "any" {
		return true
	}
	return signalName(got) == signalName(want)
}

var goSignalNames = map[string]string{
	"killed": "KILL", "terminated": "TERM", "hangup": "HUP", "interrupt": "INT",
	"quit": "QUIT", "aborted": "ABRT", "broken pipe": "PIPE", "segmentation fault": "SEGV",
	"alarm clock": "ALRM", "user defined signal 1": "USR1", "user defined signal 2": "USR2",
}

func signalName(s string) string {
	s = strings.TrimSpace(s)
	if n, ok := goSignalNames[strings.ToLower(s)]; ok {
		return n
	}
	return strings.TrimPrefix(strings.ToUpper(s), "SIG")
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return shorten(s)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return shorten(strings.TrimSpace(s))
}

func shorten(s string) string {
	const max = 120
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
