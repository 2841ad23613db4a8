package yamlnode

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	yaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
	"github.com/sshrig/sshrig/result"
)

// Problem is one problem a strict loader found, where it is: the field
// ("cases[3].moment"; "" for the file as a whole) and what is wrong.
type Problem struct {
	Line, Column int
	Field, Msg   string
}

// Problems collects a loader's problems, every one of a file in one pass.
type Problems struct{ list []Problem }

// Fail records a problem at tok (the file's start when tok is nil).
func (p *Problems) Fail(tok *token.Token, field, format string, args ...any) {
	line, col := 1, 1
	if tok != nil && tok.Position != nil {
		line, col = tok.Position.Line, tok.Position.Column
	}
	p.list = append(p.list, Problem{Line: line, Column: col, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// Len is how many problems were found so far.
func (p *Problems) Len() int { return len(p.list) }

// Err is nil without problems, else every one in file order, each made an
// error by asError (the loader's own error type), joined.
func (p *Problems) Err(asError func(Problem) error) error {
	if len(p.list) == 0 {
		return nil
	}
	sort.SliceStable(p.list, func(i, j int) bool {
		a, b := p.list[i], p.list[j]
		return a.Line < b.Line || a.Line == b.Line && a.Column < b.Column
	})
	errs := make([]error, len(p.list))
	for i, pr := range p.list {
		errs[i] = asError(pr)
	}
	return errors.Join(errs...)
}

// Str is a string node's value, or a problem naming what n is instead.
func (p *Problems) Str(n ast.Node, field string) (string, bool) {
	if s, ok := String(n); ok {
		return s, true
	}
	p.Fail(n.GetToken(), field, "is %s: want a string", Describe(n))
	return "", false
}

// ParseOne parses data as exactly one YAML document and returns its body;
// want says what the file must hold ("a top-level cases: list"). nil, with
// the problem recorded, for an empty file, invalid YAML or another count of
// documents.
func (p *Problems) ParseOne(data []byte, want string) ast.Node {
	if strings.TrimSpace(string(data)) == "" {
		p.Fail(nil, "", "the file is empty: want %s", want)
		return nil
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		var yerr yaml.Error
		if errors.As(err, &yerr) {
			p.Fail(yerr.GetToken(), "", "not valid YAML: %s", yerr.GetMessage())
		} else {
			p.Fail(nil, "", "not valid YAML: %v", err)
		}
		return nil
	}
	if len(f.Docs) != 1 || f.Docs[0].Body == nil {
		p.Fail(nil, "", "want exactly one YAML document with %s, found %d", want, len(f.Docs))
		return nil
	}
	return f.Docs[0].Body
}

// Category is a string node naming a result category, or a problem naming
// the valid ones ("" then).
func (p *Problems) Category(n ast.Node, field string) result.Category {
	return parseStr(p, n, field, result.ParseCategory)
}

// Retry is a string node naming a retry instruction, or a problem naming
// the valid ones ("" then).
func (p *Problems) Retry(n ast.Node, field string) result.Retry {
	return parseStr(p, n, field, result.ParseRetry)
}

// parseStr reads a string node with parse; a value parse refuses is a
// problem in parse's own words.
func parseStr[T ~string](p *Problems, n ast.Node, field string, parse func(string) (T, error)) T {
	s, ok := p.Str(n, field)
	if !ok {
		return ""
	}
	v, err := parse(s)
	if err != nil {
		p.Fail(n.GetToken(), field, "%s", strings.TrimPrefix(err.Error(), "result: "))
	}
	return v
}
