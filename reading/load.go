package reading

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	yaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/theory/jsonpath"

	"github.com/sshrig/sshrig/internal/yamlnode"
)

// Error is one problem in a reading file.
type Error struct {
	File         string
	Line, Column int
	Field        string // e.g. "rules[2].stderr"; "" for the file as a whole
	Msg          string
}

func (e *Error) Error() string {
	field := ""
	if e.Field != "" {
		field = e.Field + ": "
	}
	return fmt.Sprintf("%s:%d:%d: %s%s", e.File, e.Line, e.Column, field, e.Msg)
}

// Fields of a reading file, in documentation order.
var (
	topFields = []string{"reading", "tool", "rules"}
	// ruleFields: a rule's name, its conditions, and what it maps to.
	ruleFields = []string{"name", "exit", "signal", "stdout", "stderr", "json", "is_error", "text", "structured", "category", "retry"}
	pathFields = []string{"path", "equals", "matches"}
	// onlyFor says which conditions apply to which kind of tool.
	onlyFor = map[string]Kind{"exit": Exec, "signal": Exec, "stdout": Exec, "stderr": Exec, "json": Exec,
		"is_error": MCP, "text": MCP, "structured": MCP}
)

// LoadFile reads and loads a reading file.
func LoadFile(path string) (*Reading, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Load(path, data)
}

// Load parses a reading file's contents; file names it in errors. Every
// problem found is returned, joined, in file order.
func Load(file string, data []byte) (*Reading, error) {
	l := &loader{}
	r := l.load(data)
	if err := l.Err(func(p yamlnode.Problem) error {
		return &Error{File: file, Line: p.Line, Column: p.Column, Field: p.Field, Msg: p.Msg}
	}); err != nil {
		return nil, err
	}
	r.File = file
	return r, nil
}

// loader reads a reading file's syntax tree, collecting every problem.
type loader struct{ yamlnode.Problems }

func (l *loader) load(data []byte) *Reading {
	body := l.ParseOne(data, "reading:, tool: and rules:")
	if body == nil {
		return nil
	}
	pairs, ok := yamlnode.Mapping(body)
	if !ok {
		l.Fail(body.GetToken(), "", "the top level is %s: want a mapping with reading:, tool: and rules:", yamlnode.Describe(body))
		return nil
	}
	r := &Reading{}
	var rules *ast.SequenceNode
	seen := map[string]bool{}
	for _, kv := range pairs {
		key := kv.Key.GetToken().Value
		if seen[key] {
			l.Fail(kv.Key.GetToken(), key, "given twice")
			continue
		}
		seen[key] = true
		switch key {
		case "reading":
			if s, ok := l.Str(kv.Value, key); ok {
				if strings.TrimSpace(s) == "" {
					l.Fail(kv.Value.GetToken(), key, "is empty: want the reading's name")
				}
				r.Name = s
			}
		case "tool":
			if s, ok := l.Str(kv.Value, key); ok {
				switch Kind(s) {
				case Exec, MCP:
					r.Kind = Kind(s)
				default:
					l.Fail(kv.Value.GetToken(), key, "%q: want exec or mcp", s)
				}
			}
		case "rules":
			seq, ok := yamlnode.Unwrap(kv.Value).(*ast.SequenceNode)
			if !ok || len(seq.Values) == 0 {
				l.Fail(kv.Value.GetToken(), key, "is %s: want a list of at least one rule", yamlnode.Describe(kv.Value))
				continue
			}
			rules = seq
		default:
			l.Fail(kv.Key.GetToken(), key, "unknown field %q (valid: %s)", key, strings.Join(topFields, ", "))
		}
	}
	for _, want := range topFields {
		if !seen[want] {
			l.Fail(body.GetToken(), want, "missing")
		}
	}
	if rules == nil || r.Kind == "" {
		return r
	}
	names := map[string]int{}
	for i, item := range rules.Values {
		rule, ok := l.loadRule(fmt.Sprintf("rules[%d]", i), item, r.Kind)
		if !ok {
			continue
		}
		if first, dup := names[rule.Name]; dup {
			l.Fail(yamlnode.Start(item), fmt.Sprintf("rules[%d].name", i), "duplicate name %q (first at line %d)", rule.Name, first)
			continue
		}
		names[rule.Name] = rule.Line
		r.Rules = append(r.Rules, rule)
	}
	return r
}

func (l *loader) loadRule(path string, n ast.Node, kind Kind) (Rule, bool) {
	pairs, ok := yamlnode.Mapping(n)
	if !ok {
		l.Fail(n.GetToken(), path, "is %s: want a mapping of rule fields", yamlnode.Describe(n))
		return Rule{}, false
	}
	before := l.Len()
	rule := Rule{Line: yamlnode.Start(n).Position.Line}
	seen := map[string]bool{}
	for _, kv := range pairs {
		key := kv.Key.GetToken().Value
		field := path + "." + key
		if seen[key] {
			l.Fail(kv.Key.GetToken(), field, "given twice")
			continue
		}
		seen[key] = true
		if k, ok := onlyFor[key]; ok && k != kind {
			l.Fail(kv.Key.GetToken(), field, "applies to %s tools only; this reading is for %s tools", k, kind)
			continue
		}
		l.ruleField(&rule, key, field, kv)
	}
	for _, want := range []string{"name", "category", "retry"} {
		if !seen[want] {
			l.Fail(yamlnode.Start(n), path+"."+want, "missing")
		}
	}
	return rule, l.Len() == before
}

// ruleField loads one field of a rule.
func (l *loader) ruleField(rule *Rule, key, field string, kv *ast.MappingValueNode) {
	v := kv.Value
	switch key {
	case "name":
		if s, ok := l.Str(v, field); ok {
			if strings.TrimSpace(s) == "" {
				l.Fail(v.GetToken(), field, "is empty: want the native value the rule stands for")
			}
			rule.Name = s
		}
	case "exit":
		rule.exit = l.exitCodes(v, field)
	case "signal":
		if s, ok := l.Str(v, field); ok {
			rule.signal = s
		}
	case "stdout":
		rule.stdout = l.regexp(v, field)
	case "stderr":
		rule.stderr = l.regexp(v, field)
	case "text":
		rule.text = l.regexp(v, field)
	case "is_error":
		if b, ok := yamlnode.Unwrap(v).(*ast.BoolNode); ok {
			rule.isError = &b.Value
		} else {
			l.Fail(v.GetToken(), field, "is %s: want true or false", yamlnode.Describe(v))
		}
	case "json":
		rule.json = l.pathConds(v, field)
	case "structured":
		rule.structured = l.pathConds(v, field)
	case "category":
		rule.Category = l.Category(v, field)
	case "retry":
		rule.Retry = l.Retry(v, field)
	default:
		l.Fail(kv.Key.GetToken(), field, "unknown field %q (valid: %s)", key, strings.Join(ruleFields, ", "))
	}
}

// exitCodes reads an exit code, a range "A-B", or a list of them.
func (l *loader) exitCodes(v ast.Node, field string) []int {
	one := func(n ast.Node, f string) []int {
		switch x := yamlnode.Unwrap(n).(type) {
		case *ast.IntegerNode:
			c, err := strconv.ParseInt(x.GetToken().Value, 0, 64)
			if err != nil || c < 0 || c > 255 {
				l.Fail(n.GetToken(), f, "%s: want an exit code from 0 to 255", x.GetToken().Value)
				return nil
			}
			return []int{int(c)}
		case *ast.StringNode:
			lo, hi, ok := exitRange(x.Value)
			if !ok {
				l.Fail(n.GetToken(), f, "%q: want an exit code from 0 to 255 or a range such as 1-254", x.Value)
				return nil
			}
			codes := make([]int, 0, hi-lo+1)
			for c := lo; c <= hi; c++ {
				codes = append(codes, c)
			}
			return codes
		}
		l.Fail(n.GetToken(), f, "is %s: want an exit code from 0 to 255 or a range such as 1-254", yamlnode.Describe(n))
		return nil
	}
	if seq, ok := yamlnode.Unwrap(v).(*ast.SequenceNode); ok {
		if len(seq.Values) == 0 {
			l.Fail(v.GetToken(), field, "the list is empty: want at least one exit code")
			return nil
		}
		codes := []int{}
		for i, n := range seq.Values {
			codes = append(codes, one(n, fmt.Sprintf("%s[%d]", field, i))...)
		}
		return codes
	}
	return one(v, field)
}

// exitRange parses "A-B" with 0 <= A <= B <= 255.
func exitRange(s string) (lo, hi int, ok bool) {
	a, b, found := strings.Cut(strings.TrimSpace(s), "-")
	if !found {
		return 0, 0, false
	}
	x, err1 := strconv.Atoi(strings.TrimSpace(a))
	y, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil || x < 0 || y > 255 || x > y {
		return 0, 0, false
	}
	return x, y, true
}

func (l *loader) regexp(v ast.Node, field string) *regexp.Regexp {
	s, ok := l.Str(v, field)
	if !ok {
		return nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		l.Fail(v.GetToken(), field, "bad regular expression: %v", err)
		return nil
	}
	return re
}

// pathConds reads a list of {path, equals | matches} (or one of them).
func (l *loader) pathConds(v ast.Node, field string) []pathCond {
	items := []ast.Node{v}
	if seq, ok := yamlnode.Unwrap(v).(*ast.SequenceNode); ok {
		if len(seq.Values) == 0 {
			l.Fail(v.GetToken(), field, "the list is empty: want at least one {path: ...}")
			return nil
		}
		items = seq.Values
	}
	var conds []pathCond
	for i, item := range items {
		f := field
		if len(items) > 1 || item != v {
			f = fmt.Sprintf("%s[%d]", field, i)
		}
		if c, ok := l.pathCond(item, f); ok {
			conds = append(conds, c)
		}
	}
	return conds
}

func (l *loader) pathCond(n ast.Node, field string) (pathCond, bool) {
	pairs, ok := yamlnode.Mapping(n)
	if !ok {
		l.Fail(n.GetToken(), field, "is %s: want a mapping with path: and equals: or matches:", yamlnode.Describe(n))
		return pathCond{}, false
	}
	before := l.Len()
	var c pathCond
	seen := map[string]bool{}
	for _, kv := range pairs {
		key := kv.Key.GetToken().Value
		f := field + "." + key
		if seen[key] {
			l.Fail(kv.Key.GetToken(), f, "given twice")
			continue
		}
		seen[key] = true
		switch key {
		case "path":
			if s, ok := l.Str(kv.Value, f); ok {
				p, err := jsonpath.Parse(s)
				if err != nil {
					l.Fail(kv.Value.GetToken(), f, "bad JSON path: %s", strings.TrimPrefix(err.Error(), "jsonpath: "))
				}
				c.path = p
			}
		case "equals":
			var x any
			if err := yaml.NodeToValue(kv.Value, &x); err != nil {
				l.Fail(kv.Value.GetToken(), f, "not a value: %v", err)
			}
			c.equals, c.compare = normal(x), true
		case "matches":
			c.matches = l.regexp(kv.Value, f)
		default:
			l.Fail(kv.Key.GetToken(), f, "unknown field %q (valid: %s)", key, strings.Join(pathFields, ", "))
		}
	}
	if !seen["path"] {
		l.Fail(yamlnode.Start(n), field+".path", "missing")
	}
	if seen["equals"] && seen["matches"] {
		l.Fail(yamlnode.Start(n), field, "give equals or matches, not both")
	}
	return c, l.Len() == before
}
