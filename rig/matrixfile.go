package rig

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	yaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/operations"
	"github.com/sshrig/sshrig/markers"
	"github.com/sshrig/sshrig/result"
)

// A matrix file is YAML whose top-level cases: key holds the list of cases
// (docs/matrix.md). Loading is strict: an unknown field, a value of the wrong
// type or outside its valid set, a combination that cannot apply, or a
// duplicate id is an error naming the file, line, column and field.

// MatrixError is one problem in a matrix file.
type MatrixError struct {
	File         string
	Line, Column int
	Field        string // e.g. "cases[3].moment"; "" for the file as a whole
	Msg          string
}

func (e *MatrixError) Error() string {
	field := ""
	if e.Field != "" {
		field = e.Field + ": "
	}
	return fmt.Sprintf("%s:%d:%d: %s%s", e.File, e.Line, e.Column, field, e.Msg)
}

// UnresolvableHost is the host a case with `host: unresolvable` gets: a
// well-formed name under .invalid, which RFC 6761 reserves so that it never
// resolves. (A malformed name, such as one with an empty label, would test a
// client's input checks instead of its handling of a failed lookup.)
const UnresolvableHost = "sshrig-unresolvable.invalid"

// matrixFields are the fields a case may have, in documentation order.
var matrixFields = []string{
	"id", "alias", "moment", "cut", "disposition", "exit_code", "operation", "command",
	"output_bytes", "credential", "refusal", "fixture", "scenario", "reconcile_probe", "stall", "host", "budget", "expect", "notes", "link", "answer_delay",
}

// MatrixFields lists the fields of a case in a matrix file.
func MatrixFields() []string { return append([]string(nil), matrixFields...) }

// LoadMatrixFile reads and loads a matrix file.
func LoadMatrixFile(path string) ([]Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return LoadMatrix(path, data)
}

type loader struct {
	file string
	errs []*MatrixError
}

func (l *loader) fail(tok *token.Token, field, format string, args ...any) {
	line, col := 1, 1
	if tok != nil && tok.Position != nil {
		line, col = tok.Position.Line, tok.Position.Column
	}
	l.errs = append(l.errs, &MatrixError{File: l.file, Line: line, Column: col, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// LoadMatrix parses a matrix file's contents; file names it in errors. All
// problems found are returned, joined, in file order.
func LoadMatrix(file string, data []byte) ([]Case, error) {
	l := &loader{file: file}
	cases := l.load(data)
	if len(l.errs) > 0 {
		sort.SliceStable(l.errs, func(i, j int) bool {
			a, b := l.errs[i], l.errs[j]
			return a.Line < b.Line || a.Line == b.Line && a.Column < b.Column
		})
		errs := make([]error, len(l.errs))
		for i, e := range l.errs {
			errs[i] = e
		}
		return nil, errors.Join(errs...)
	}
	return cases, nil
}

func (l *loader) load(data []byte) []Case {
	if strings.TrimSpace(string(data)) == "" {
		l.fail(nil, "", "the file is empty: want a top-level cases: list")
		return nil
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		var yerr yaml.Error
		if errors.As(err, &yerr) {
			l.fail(yerr.GetToken(), "", "not valid YAML: %s", yerr.GetMessage())
		} else {
			l.fail(nil, "", "not valid YAML: %v", err)
		}
		return nil
	}
	if len(f.Docs) != 1 || f.Docs[0].Body == nil {
		l.fail(nil, "", "want exactly one YAML document with a top-level cases: list, found %d", len(f.Docs))
		return nil
	}
	top, ok := unwrap(f.Docs[0].Body).(*ast.MappingNode)
	if !ok {
		l.fail(f.Docs[0].Body.GetToken(), "", "the top level is %s: want a mapping with a cases: list", describe(f.Docs[0].Body))
		return nil
	}
	var list *ast.SequenceNode
	for _, kv := range top.Values {
		key := kv.Key.GetToken().Value
		if key != "cases" {
			l.fail(kv.Key.GetToken(), key, "unknown top-level field %q (valid: cases)", key)
			continue
		}
		seq, ok := unwrap(kv.Value).(*ast.SequenceNode)
		if !ok {
			l.fail(kv.Value.GetToken(), "cases", "is %s: want a list of cases", describe(kv.Value))
			continue
		}
		list = seq
	}
	if list == nil {
		if len(l.errs) == 0 {
			l.fail(top.GetToken(), "", "no cases: key")
		}
		return nil
	}
	if len(list.Values) == 0 {
		l.fail(list.GetToken(), "cases", "the list is empty: a matrix must hold at least one case")
		return nil
	}
	var cases []Case
	seen := map[string]int{}
	for i, item := range list.Values {
		c, ok := l.loadCase(fmt.Sprintf("cases[%d]", i), item)
		if !ok {
			continue
		}
		if first, dup := seen[c.ID]; dup {
			l.fail(item.GetToken(), fmt.Sprintf("cases[%d].id", i), "duplicate id %q (first at line %d)", c.ID, first)
			continue
		}
		seen[c.ID] = c.Line
		cases = append(cases, c)
	}
	return cases
}

// unwrap skips anchors and tags.
func unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		default:
			return n
		}
	}
}

func describe(n ast.Node) string {
	switch unwrap(n).(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.IntegerNode, *ast.FloatNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.NullNode:
		return "empty (null)"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.AliasNode:
		return "an alias"
	}
	return "something else"
}

// mapping returns a mapping node's pairs, also for a single "key: value" that
// the parser returns as one MappingValueNode.
func mapping(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch v := unwrap(n).(type) {
	case *ast.MappingNode:
		return v.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{v}, true
	}
	return nil, false
}

func (l *loader) str(n ast.Node, field string) (string, bool) {
	switch v := unwrap(n).(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	}
	l.fail(n.GetToken(), field, "is %s: want a string", describe(n))
	return "", false
}

func (l *loader) integer(n ast.Node, field string, lo, hi int64) (int64, bool) {
	v, ok := unwrap(n).(*ast.IntegerNode)
	if !ok {
		l.fail(n.GetToken(), field, "is %s: want a whole number from %d to %d", describe(n), lo, hi)
		return 0, false
	}
	i, err := strconv.ParseInt(strings.ReplaceAll(v.GetToken().Value, "_", ""), 0, 64)
	if err != nil || i < lo || i > hi {
		l.fail(n.GetToken(), field, "%s is out of range: want a whole number from %d to %d", v.GetToken().Value, lo, hi)
		return 0, false
	}
	return i, true
}

func (l *loader) boolean(n ast.Node, field string) (bool, bool) {
	v, ok := unwrap(n).(*ast.BoolNode)
	if !ok {
		l.fail(n.GetToken(), field, "is %s: want true or false", describe(n))
		return false, false
	}
	return v.Value, true
}

// fieldPos remembers where each field of a case was, for later checks.
type fieldPos map[string]*token.Token

func (l *loader) loadCase(path string, n ast.Node) (Case, bool) {
	pairs, ok := mapping(n)
	if !ok {
		l.fail(n.GetToken(), path, "is %s: want a mapping of case fields", describe(n))
		return Case{}, false
	}
	before := len(l.errs)
	c := Case{Line: n.GetToken().Position.Line}
	pos := fieldPos{}
	var expect *expectSpec
	for _, kv := range pairs {
		key := kv.Key.GetToken().Value
		field := path + "." + key
		if _, dup := pos[key]; dup {
			l.fail(kv.Key.GetToken(), field, "given twice")
			continue
		}
		pos[key] = kv.Value.GetToken()
		v := kv.Value
		switch {
		case key == "expect":
			expect = l.loadExpect(field, v)
		case l.workloadField(&c, key, field, v):
		case l.scenarioField(&c, key, field, path, v, pos):
		case key == "link": // rig/link.go
			if s, ok := l.str(v, field); ok {
				lk, err := ParseLink(s)
				if err != nil {
					l.fail(v.GetToken(), field, "%v", err)
				}
				c.Link = &lk
			}
		case key == "answer_delay": // rig/answerdelay.go
			if s, ok := l.str(v, field); ok {
				d, err := ParseAnswerDelay(s)
				if err != nil {
					l.fail(v.GetToken(), field, "%v", err)
				}
				c.AnswerDelay = &d
			}
		default:
			l.fail(kv.Key.GetToken(), field, "unknown field %q (valid: %s)", key, strings.Join(matrixFields, ", "))
		}
	}
	if len(l.errs) > before {
		return Case{}, false
	}
	if expect != nil {
		c.Expect = &Expected{Category: expect.category, Retry: expect.retry}
	}
	l.checkCase(path, n, c, pos)
	if len(l.errs) > before {
		return Case{}, false
	}
	return c.withDefaults(), true
}

// workloadField loads one of the fields that say what runs and where it is
// cut; it reports whether key is one of them.
func (l *loader) workloadField(c *Case, key, field string, v ast.Node) bool {
	switch key {
	case "id":
		if s, ok := l.str(v, field); ok {
			if err := markers.ValidID(s); err != nil {
				l.fail(v.GetToken(), field, "%v", strings.TrimPrefix(err.Error(), "markers: "))
			}
			c.ID = s
		}
	case "alias":
		if s, ok := l.str(v, field); ok {
			if err := markers.ValidID(s); err != nil {
				l.fail(v.GetToken(), field, "%v", strings.TrimPrefix(err.Error(), "markers: "))
			}
			c.Alias = s
		}
	case "moment":
		if s, ok := l.str(v, field); ok {
			m, err := fault.ParseMoment(s)
			if err != nil {
				l.fail(v.GetToken(), field, "%v", err)
			}
			c.Moment = m
		}
	case "cut":
		if s, ok := l.str(v, field); ok {
			cut, err := fault.ParseCut(s)
			switch {
			case err != nil:
				l.fail(v.GetToken(), field, "%v", err)
			case c.Cut == fault.Stall: // stall: true came first
				l.fail(v.GetToken(), field, "a stall is instead of a cut: leave cut out")
			}
			c.Cut = cut
		}
	case "disposition":
		if s, ok := l.str(v, field); ok {
			d, err := fault.ParseDisposition(s)
			if err != nil {
				l.fail(v.GetToken(), field, "%v", err)
			}
			c.Disposition = d
		}
	case "exit_code":
		if i, ok := l.integer(v, field, 0, 255); ok {
			c.ExitCode = int(i)
		}
	case "operation":
		if s, ok := l.str(v, field); ok {
			if err := markers.ValidID(s); err != nil {
				l.fail(v.GetToken(), field, "operation %q: use letters, digits and . _ : -", s)
			}
			c.Operation = s
		}
	case "command":
		if s, ok := l.str(v, field); ok {
			if strings.TrimSpace(s) == "" {
				l.fail(v.GetToken(), field, "is empty: leave it out for the operation's default workload")
			}
			c.Command = s
		}
	case "output_bytes":
		if i, ok := l.integer(v, field, 1, 1<<30); ok {
			c.OutputBytes = i
		}
	default:
		return false
	}
	return true
}

// scenarioField loads one of the fields that shape a case beyond its cut
// (credential, refusal, fixture, scenario, probe, stall, host, budget, notes);
// it reports whether key is one of them.
func (l *loader) scenarioField(c *Case, key, field, path string, v ast.Node, pos fieldPos) bool {
	switch key {
	case "credential":
		if s, ok := l.str(v, field); ok {
			cr, err := fault.ParseCredential(s)
			if err != nil {
				l.fail(v.GetToken(), field, "%v", err)
			}
			c.Credential = cr
		}
	case "refusal":
		if s, ok := l.str(v, field); ok {
			r, err := fault.ParseRefusal(s)
			if err != nil {
				l.fail(v.GetToken(), field, "%v", err)
			}
			c.Refusal = r
		}
	case "fixture":
		if s, ok := l.str(v, field); ok {
			fx, err := operations.ParseFixture(s)
			if err != nil {
				l.fail(v.GetToken(), field, "%v", err)
			}
			c.Fixture = string(fx)
		}
	case "scenario":
		if s, ok := l.str(v, field); ok {
			if s != ScenarioRecordNote {
				l.fail(v.GetToken(), field, "unknown scenario %q (valid: %s)", s, ScenarioRecordNote)
			}
			c.Scenario = s
		}
	case "reconcile_probe":
		if s, ok := l.str(v, field); ok {
			if strings.TrimSpace(s) == "" {
				l.fail(v.GetToken(), field, "is empty: give the probe's shell command, or leave the field out")
			}
			c.ReconcileProbe = s
		}
	case "stall":
		// stall: true is cut: stall, spelled as the field it was first.
		if b, ok := l.boolean(v, field); ok && b {
			if tok, given := pos["cut"]; given {
				l.fail(tok, path+".cut", "a stall is instead of a cut: leave cut out")
			} else {
				c.Cut = fault.Stall
			}
		}
	case "host":
		if s, ok := l.str(v, field); ok {
			if s != "unresolvable" {
				l.fail(v.GetToken(), field, "unknown host %q (valid: unresolvable): the rig reaches only loopback and its own containers", s)
			}
			c.Host = UnresolvableHost
		}
	case "budget":
		if s, ok := l.str(v, field); ok {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				l.fail(v.GetToken(), field, "bad duration %q: want a positive Go duration such as 5s or 1500ms", s)
			}
			c.Budget = d
		}
	case "notes":
		if s, ok := l.str(v, field); ok {
			c.Notes = s
		}
	default:
		return false
	}
	return true
}

type expectSpec struct {
	category result.Category
	retry    result.Retry
}

func (l *loader) loadExpect(field string, n ast.Node) *expectSpec {
	pairs, ok := mapping(n)
	if !ok {
		l.fail(n.GetToken(), field, "is %s: want a mapping with category and retry", describe(n))
		return nil
	}
	e := &expectSpec{}
	for _, kv := range pairs {
		key := kv.Key.GetToken().Value
		f := field + "." + key
		switch key {
		case "category":
			if s, ok := l.str(kv.Value, f); ok {
				c, err := result.ParseCategory(s)
				if err != nil {
					l.fail(kv.Value.GetToken(), f, "%v", strings.TrimPrefix(err.Error(), "result: "))
				}
				e.category = c
			}
		case "retry":
			if s, ok := l.str(kv.Value, f); ok {
				r, err := result.ParseRetry(s)
				if err != nil {
					l.fail(kv.Value.GetToken(), f, "%v", strings.TrimPrefix(err.Error(), "result: "))
				}
				e.retry = r
			}
		default:
			l.fail(kv.Key.GetToken(), f, "unknown field %q (valid: category, retry)", key)
		}
	}
	if e.category == "" || e.retry == "" {
		l.fail(n.GetToken(), field, "needs both category and retry")
		return nil
	}
	return e
}

// checkCase applies the rules that tie fields together (Case.Validate's),
// at the line of the field each names.
func (l *loader) checkCase(path string, n ast.Node, c Case, pos fieldPos) {
	for _, f := range []string{"id", "moment"} {
		if _, ok := pos[f]; !ok {
			l.fail(n.GetToken(), path+"."+f, "missing (required)")
		}
	}
	if _, ok := pos["moment"]; !ok {
		return
	}
	at := func(field string) *token.Token {
		if t, ok := pos[field]; ok {
			return t
		}
		return n.GetToken()
	}
	for _, p := range c.combinationProblems() {
		field := p.Field
		if _, ok := pos[field]; !ok && field == "stall" {
			field = "cut" // given as cut: stall
		}
		l.fail(at(field), path+"."+field, "%s", p.Msg)
	}
	// A Go case's zero exit code is not given; in a file it is.
	if _, ok := pos["exit_code"]; ok && c.Scenario != "" && c.ExitCode == 0 {
		l.fail(at("exit_code"), path+".exit_code", "a scenario defines its own commands and answers: leave exit_code out")
	}
}

func names[T fmt.Stringer](vs []T) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return strings.Join(out, ", ")
}
