package matrix

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/operations"
	"github.com/sshrig/sshrig/internal/yamlnode"
	"github.com/sshrig/sshrig/markers"
	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
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

// HostKeyChanged is the one value of a case's host_key field (C08).
const HostKeyChanged = "changed"

// matrixFields are the fields a case may have, in documentation order.
var matrixFields = []string{
	"id", "alias", "moment", "cut", "disposition", "exit_code", "operation", "command",
	"output_bytes", "credential", "refusal", "fixture", "scenario", "approval", "call", "reconcile_probe", "stall", "host", "host_key", "hop", "cut_hosts", "reboot_pause", "budget", "expect", "notes", "link", "answer_delay",
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

// loader reads a matrix file's syntax tree, collecting every problem.
type loader struct{ yamlnode.Problems }

// LoadMatrix parses a matrix file's contents; file names it in errors. All
// problems found are returned, joined, in file order.
func LoadMatrix(file string, data []byte) ([]Case, error) {
	l := &loader{}
	cases := l.load(data)
	if err := l.Err(func(p yamlnode.Problem) error {
		return &MatrixError{File: file, Line: p.Line, Column: p.Column, Field: p.Field, Msg: p.Msg}
	}); err != nil {
		return nil, err
	}
	return cases, nil
}

func (l *loader) load(data []byte) []Case {
	body := l.ParseOne(data, "a top-level cases: list")
	if body == nil {
		return nil
	}
	top, ok := yamlnode.Unwrap(body).(*ast.MappingNode)
	if !ok {
		l.Fail(body.GetToken(), "", "the top level is %s: want a mapping with a cases: list", yamlnode.Describe(body))
		return nil
	}
	var list *ast.SequenceNode
	for _, kv := range top.Values {
		key := kv.Key.GetToken().Value
		if key != "cases" {
			l.Fail(kv.Key.GetToken(), key, "unknown top-level field %q (valid: cases)", key)
			continue
		}
		seq, ok := yamlnode.Unwrap(kv.Value).(*ast.SequenceNode)
		if !ok {
			l.Fail(kv.Value.GetToken(), "cases", "is %s: want a list of cases", yamlnode.Describe(kv.Value))
			continue
		}
		list = seq
	}
	if list == nil {
		if l.Len() == 0 {
			l.Fail(top.GetToken(), "", "no cases: key")
		}
		return nil
	}
	if len(list.Values) == 0 {
		l.Fail(list.GetToken(), "cases", "the list is empty: a matrix must hold at least one case")
		return nil
	}
	var cases []Case
	seen := map[string]int{}
	for i, item := range list.Values {
		c, ok := l.loadCase(fmt.Sprintf("cases[%d]", i), item)
		// Duplicates are found from the ids as written, in the same pass
		// as the cases' other errors, not once those are fixed.
		if id := writtenID(item); id != "" {
			if first, dup := seen[id]; dup {
				l.Fail(item.GetToken(), fmt.Sprintf("cases[%d].id", i), "duplicate id %q (first at line %d)", id, first)
				continue
			}
			seen[id] = item.GetToken().Position.Line
		}
		if ok {
			cases = append(cases, c)
		}
	}
	return cases
}

// writtenID is a case's id as the file writes it ("" if it does not, or
// not as a string), whatever its other fields hold.
func writtenID(n ast.Node) string {
	pairs, _ := yamlnode.Mapping(n)
	for _, kv := range pairs {
		if kv.Key.GetToken().Value == "id" {
			if s, ok := yamlnode.Unwrap(kv.Value).(*ast.StringNode); ok {
				return s.Value
			}
		}
	}
	return ""
}

func (l *loader) integer(n ast.Node, field string, lo, hi int64) (int64, bool) {
	v, ok := yamlnode.Unwrap(n).(*ast.IntegerNode)
	if !ok {
		l.Fail(n.GetToken(), field, "is %s: want a whole number from %d to %d", yamlnode.Describe(n), lo, hi)
		return 0, false
	}
	i, err := strconv.ParseInt(strings.ReplaceAll(v.GetToken().Value, "_", ""), 0, 64)
	if err != nil || i < lo || i > hi {
		l.Fail(n.GetToken(), field, "%s is out of range: want a whole number from %d to %d", v.GetToken().Value, lo, hi)
		return 0, false
	}
	return i, true
}

func (l *loader) boolean(n ast.Node, field string) (bool, bool) {
	v, ok := yamlnode.Unwrap(n).(*ast.BoolNode)
	if !ok {
		l.Fail(n.GetToken(), field, "is %s: want true or false", yamlnode.Describe(n))
		return false, false
	}
	return v.Value, true
}

// fieldPos remembers where each field of a case was, for later checks.
type fieldPos map[string]*token.Token

func (l *loader) loadCase(path string, n ast.Node) (Case, bool) {
	pairs, ok := yamlnode.Mapping(n)
	if !ok {
		l.Fail(n.GetToken(), path, "is %s: want a mapping of case fields", yamlnode.Describe(n))
		return Case{}, false
	}
	before := l.Len()
	c := Case{Line: n.GetToken().Position.Line}
	pos := fieldPos{}
	var expect *expectSpec
	for _, kv := range pairs {
		key := kv.Key.GetToken().Value
		field := path + "." + key
		if _, dup := pos[key]; dup {
			l.Fail(kv.Key.GetToken(), field, "given twice")
			continue
		}
		pos[key] = kv.Value.GetToken()
		v := kv.Value
		switch {
		case key == "expect":
			expect = l.loadExpect(field, v)
		case l.workloadField(&c, key, field, v):
		case l.scenarioField(&c, key, field, path, v, pos):
		case key == "link": // matrix/link.go
			if s, ok := l.Str(v, field); ok {
				lk, err := ParseLink(s)
				if err != nil {
					l.Fail(v.GetToken(), field, "%v", err)
				}
				c.Link = &lk
			}
		case key == "answer_delay": // matrix/answerdelay.go
			if s, ok := l.Str(v, field); ok {
				d, err := ParseAnswerDelay(s)
				if err != nil {
					l.Fail(v.GetToken(), field, "%v", err)
				}
				c.AnswerDelay = &d
			}
		default:
			l.Fail(kv.Key.GetToken(), field, "unknown field %q (valid: %s)", key, strings.Join(matrixFields, ", "))
		}
	}
	if l.Len() > before {
		return Case{}, false
	}
	if expect != nil {
		c.Expect = &Expected{Category: expect.category, Retry: expect.retry}
	}
	l.checkCase(path, n, c, pos)
	if l.Len() > before {
		return Case{}, false
	}
	return c.WithDefaults(), true
}

// workloadField loads one of the fields that say what runs and where it is
// cut; it reports whether key is one of them.
func (l *loader) workloadField(c *Case, key, field string, v ast.Node) bool {
	switch key {
	case "id":
		if s, ok := l.Str(v, field); ok {
			if err := markers.ValidID(s); err != nil {
				l.Fail(v.GetToken(), field, "%v", strings.TrimPrefix(err.Error(), "markers: "))
			}
			c.ID = s
		}
	case "alias":
		if s, ok := l.Str(v, field); ok {
			if err := markers.ValidID(s); err != nil {
				l.Fail(v.GetToken(), field, "%v", strings.TrimPrefix(err.Error(), "markers: "))
			}
			c.Alias = s
		}
	case "moment":
		if s, ok := l.Str(v, field); ok {
			m, err := fault.ParseMoment(s)
			if err != nil {
				l.Fail(v.GetToken(), field, "%v", err)
			}
			c.Moment = m
		}
	case "cut":
		if s, ok := l.Str(v, field); ok {
			cut, err := fault.ParseCut(s)
			switch {
			case err != nil:
				l.Fail(v.GetToken(), field, "%v", err)
			case c.Cut == fault.Stall: // stall: true came first
				l.Fail(v.GetToken(), field, "a stall is instead of a cut: leave cut out")
			}
			c.Cut = cut
		}
	case "disposition":
		if s, ok := l.Str(v, field); ok {
			d, err := fault.ParseDisposition(s)
			if err != nil {
				l.Fail(v.GetToken(), field, "%v", err)
			}
			c.Disposition = d
		}
	case "exit_code":
		if i, ok := l.integer(v, field, 0, 255); ok {
			c.ExitCode = int(i)
		}
	case "operation":
		if s, ok := l.Str(v, field); ok {
			if err := markers.ValidID(s); err != nil {
				l.Fail(v.GetToken(), field, "operation %q: use letters, digits and . _ : -", s)
			}
			c.Operation = s
		}
	case "command":
		if s, ok := l.Str(v, field); ok {
			if strings.TrimSpace(s) == "" {
				l.Fail(v.GetToken(), field, "is empty: leave it out for the operation's default workload")
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
// (credential, refusal, fixture, scenario, probe, stall, host, host_key,
// budget, notes);
// it reports whether key is one of them.
func (l *loader) scenarioField(c *Case, key, field, path string, v ast.Node, pos fieldPos) bool {
	switch key {
	case "credential":
		if s, ok := l.Str(v, field); ok {
			cr, err := fault.ParseCredential(s)
			if err != nil {
				l.Fail(v.GetToken(), field, "%v", err)
			}
			c.Credential = cr
		}
	case "refusal":
		if s, ok := l.Str(v, field); ok {
			r, err := fault.ParseRefusal(s)
			if err != nil {
				l.Fail(v.GetToken(), field, "%v", err)
			}
			c.Refusal = r
		}
	case "fixture":
		if s, ok := l.Str(v, field); ok {
			fx, err := operations.ParseFixture(s)
			if err != nil {
				l.Fail(v.GetToken(), field, "%v", err)
			}
			c.Fixture = string(fx)
		}
	case "scenario":
		if s, ok := l.Str(v, field); ok {
			if s != ScenarioRecordNote {
				l.Fail(v.GetToken(), field, "unknown scenario %q (valid: %s)", s, ScenarioRecordNote)
			}
			c.Scenario = s
		}
	case "approval":
		if s, ok := l.Str(v, field); ok {
			if !slices.Contains(tool.ApprovalModes(), s) {
				l.Fail(v.GetToken(), field, "unknown approval %q (valid: %s)", s, strings.Join(tool.ApprovalModes(), ", "))
			}
			c.Approval = s
		}
	case "call":
		if s, ok := l.Str(v, field); ok {
			if !slices.Contains(Calls(), s) {
				l.Fail(v.GetToken(), field, "unknown call %q (valid: %s)", s, strings.Join(Calls(), ", "))
			}
			c.Call = s
		}
	case "reconcile_probe":
		if s, ok := l.Str(v, field); ok {
			if strings.TrimSpace(s) == "" {
				l.Fail(v.GetToken(), field, "is empty: give the probe's shell command, or leave the field out")
			}
			c.ReconcileProbe = s
		}
	case "stall":
		// stall: true is cut: stall, spelled as the field it was first.
		if b, ok := l.boolean(v, field); ok && b {
			if tok, given := pos["cut"]; given {
				l.Fail(tok, path+".cut", "a stall is instead of a cut: leave cut out")
			} else {
				c.Cut = fault.Stall
			}
		}
	case "host":
		if s, ok := l.Str(v, field); ok {
			if s != "unresolvable" {
				l.Fail(v.GetToken(), field, "unknown host %q (valid: unresolvable): the rig reaches only loopback and its own containers", s)
			}
			c.Host = UnresolvableHost
		}
	case "cut_hosts":
		if i, ok := l.integer(v, field, 1, MaxHosts-1); ok {
			c.CutHosts = int(i)
		}
	case "hop":
		if s, ok := l.Str(v, field); ok {
			h, err := fault.ParseHop(s)
			if err != nil {
				l.Fail(v.GetToken(), field, "%v", err)
			}
			c.Hop = h
		}
	case "host_key":
		if s, ok := l.Str(v, field); ok {
			if s != HostKeyChanged {
				l.Fail(v.GetToken(), field, "unknown host_key %q (valid: %s): the tool's known_hosts then names a key the server does not have", s, HostKeyChanged)
			}
			c.ChangedHostKey = true
		}
	case "reboot_pause":
		if s, ok := l.Str(v, field); ok {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				l.Fail(v.GetToken(), field, "bad duration %q: want a positive Go duration such as 2s or 500ms", s)
			}
			c.RebootPause = d
		}
	case "budget":
		if s, ok := l.Str(v, field); ok {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				l.Fail(v.GetToken(), field, "bad duration %q: want a positive Go duration such as 5s or 1500ms", s)
			}
			c.Budget = d
		}
	case "notes":
		if s, ok := l.Str(v, field); ok {
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
	pairs, ok := yamlnode.Mapping(n)
	if !ok {
		l.Fail(n.GetToken(), field, "is %s: want a mapping with category and retry", yamlnode.Describe(n))
		return nil
	}
	e := &expectSpec{}
	for _, kv := range pairs {
		key := kv.Key.GetToken().Value
		f := field + "." + key
		switch key {
		case "category":
			e.category = l.Category(kv.Value, f)
		case "retry":
			e.retry = l.Retry(kv.Value, f)
		default:
			l.Fail(kv.Key.GetToken(), f, "unknown field %q (valid: category, retry)", key)
		}
	}
	if e.category == "" || e.retry == "" {
		l.Fail(n.GetToken(), field, "needs both category and retry")
		return nil
	}
	return e
}

// checkCase applies the rules that tie fields together (Case.Validate's),
// at the line of the field each names.
func (l *loader) checkCase(path string, n ast.Node, c Case, pos fieldPos) {
	for _, f := range []string{"id", "moment"} {
		if _, ok := pos[f]; !ok {
			l.Fail(n.GetToken(), path+"."+f, "missing (required)")
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
		l.Fail(at(field), path+"."+field, "%s", p.Msg)
	}
	// A Go case's zero exit code is not given; in a file it is.
	if _, ok := pos["exit_code"]; ok && c.Scenario != "" && c.ExitCode == 0 {
		l.Fail(at("exit_code"), path+".exit_code", "a scenario defines its own commands and answers: leave exit_code out")
	}
}

func names[T fmt.Stringer](vs []T) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return strings.Join(out, ", ")
}
