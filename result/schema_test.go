package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaPath is the published schema, relative to this package's directory
// (go test runs in it).
const schemaPath = "../docs/result.schema.json"

var (
	schemaOnce sync.Once
	schemaC    *jsonschema.Schema
	schemaErr  error
)

// compiledSchema compiles the schema once per process: the fuzz target
// calls it for every input.
func compiledSchema(tb testing.TB) *jsonschema.Schema {
	tb.Helper()
	schemaOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		schemaC, schemaErr = c.Compile(schemaPath)
	})
	if schemaErr != nil {
		tb.Fatalf("compile %s: %v", schemaPath, schemaErr)
	}
	return schemaC
}

// schemaAccepts reports whether b is one JSON value that the schema accepts.
// parsed is false when the validator's own JSON reader refused b (syntax,
// trailing data): the schema has no say on such input.
func schemaAccepts(tb testing.TB, b []byte) (parsed, ok bool, err error) {
	tb.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return false, false, err
	}
	err = compiledSchema(tb).Validate(inst)
	return true, err == nil, err
}

// rawSchema is the schema document as plain JSON, for comparing its parts
// with the Go definitions.
func rawSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func strs(t *testing.T, v any) []string {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("%v is not a JSON array", v)
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			t.Fatalf("%v is not a string", e)
		}
		out[i] = s
	}
	return out
}

func property(t *testing.T, m map[string]any, name string) map[string]any {
	t.Helper()
	props, _ := m["properties"].(map[string]any)
	p, ok := props[name].(map[string]any)
	if !ok {
		t.Fatalf("schema has no property %q", name)
	}
	return p
}

// TestSchemaMatchesGo proves the schema and the Go definitions describe the
// same contract, so a tool validated by the schema is read the same way by
// the rig.
func TestSchemaMatchesGo(t *testing.T) {
	m := rawSchema(t)
	compiledSchema(t)

	t.Run("draft", func(t *testing.T) {
		if m["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Fatalf("$schema = %v", m["$schema"])
		}
		if m["type"] != "object" || m["additionalProperties"] != false {
			t.Fatalf("want type object and additionalProperties false, got %v and %v", m["type"], m["additionalProperties"])
		}
	})

	t.Run("category enum and meanings", func(t *testing.T) {
		p := property(t, m, "category")
		want := join(Categories())
		if got := strings.Join(strs(t, p["enum"]), ", "); got != want {
			t.Fatalf("schema category enum = %s\nCategories() = %s", got, want)
		}
		desc, _ := p["description"].(string)
		for _, c := range Categories() {
			if line := "- " + string(c) + ": " + c.Meaning(); !strings.Contains(desc, line) {
				t.Errorf("category description lacks %q", line)
			}
		}
	})

	t.Run("retry enum and meanings", func(t *testing.T) {
		p := property(t, m, "retry")
		want := join(Retries())
		if got := strings.Join(strs(t, p["enum"]), ", "); got != want {
			t.Fatalf("schema retry enum = %s\nRetries() = %s", got, want)
		}
		desc, _ := p["description"].(string)
		for _, r := range Retries() {
			if line := "- " + string(r) + ": " + r.Meaning(); !strings.Contains(desc, line) {
				t.Errorf("retry description lacks %q", line)
			}
		}
	})

	// The struct tags are what encoding/json writes, so they are the
	// ground truth the schema and the parser's field table must match.
	var tagged, required []string
	types := map[string]string{}
	rt := reflect.TypeFor[Result]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		tagged = append(tagged, name)
		if opts != "omitempty" {
			required = append(required, name)
		}
		switch f.Type.Kind() {
		case reflect.Bool:
			types[name] = "boolean"
		case reflect.String:
			types[name] = "string"
		default:
			t.Fatalf("field %s has kind %s; extend this test", f.Name, f.Type.Kind())
		}
	}

	t.Run("required", func(t *testing.T) {
		if got := strs(t, m["required"]); !slices.Equal(got, required) {
			t.Fatalf("schema required = %v, struct tags say %v", got, required)
		}
	})

	t.Run("properties", func(t *testing.T) {
		props, _ := m["properties"].(map[string]any)
		var got []string
		for k := range props {
			got = append(got, k)
		}
		if !sameSet(got, tagged) {
			t.Fatalf("schema properties = %v, struct tags = %v", got, tagged)
		}
		for name, typ := range types {
			if p := property(t, m, name); p["type"] != typ {
				t.Errorf("schema type of %s = %v, Go type says %s", name, p["type"], typ)
			}
			if _, ok := property(t, m, name)["description"].(string); !ok {
				t.Errorf("schema property %s has no description", name)
			}
		}
		for _, name := range []string{"operation", "correlation_id"} {
			if ml, _ := property(t, m, name)["minLength"].(float64); ml != 1 {
				t.Errorf("schema %s minLength = %v, want 1", name, ml)
			}
		}
	})

	t.Run("parser field table", func(t *testing.T) {
		var names, req []string
		for _, f := range fields {
			names = append(names, f.name)
			if f.required {
				req = append(req, f.name)
			}
			if f.jsonType != types[f.name] {
				t.Errorf("parser wants %s to be %s, Go type says %s", f.name, f.jsonType, types[f.name])
			}
		}
		if !slices.Equal(names, tagged) || !slices.Equal(req, required) {
			t.Fatalf("parser fields %v (required %v), struct tags %v (required %v)", names, req, tagged, required)
		}
	})
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestSchemaAgreesWithParse runs the Parse table through the schema. For
// every document the schema can judge (one JSON value, no duplicate keys,
// within the size cap), both must give the same verdict.
func TestSchemaAgreesWithParse(t *testing.T) {
	compiledSchema(t)
	// Violations a JSON Schema cannot express: the validator reads JSON into
	// a map first, so it never sees these.
	beyondSchema := map[error]bool{ErrEmpty: true, ErrSyntax: true, ErrTrailingData: true,
		ErrDuplicateField: true, ErrTooLarge: true}
	kinds := map[error]bool{}
	for _, tc := range parseCases() {
		if beyondSchema[tc.err] {
			continue
		}
		kinds[tc.err] = true
		t.Run(tc.name, func(t *testing.T) {
			_, perr := Parse([]byte(tc.in))
			parsed, ok, serr := schemaAccepts(t, []byte(tc.in))
			if !parsed {
				// The validator's reader refused it (a shape error with
				// trailing data): that is a refusal too.
				if perr == nil {
					t.Fatalf("Parse accepts a document the schema validator cannot read: %v", serr)
				}
				return
			}
			if ok != (perr == nil) {
				t.Fatalf("disagreement on %s\n  Parse: %v\n schema: %v", tc.in, perr, serr)
			}
		})
	}
	// Every kind the schema can express must be covered by the table.
	for _, e := range []error{nil, ErrNotObject, ErrUnknownField, ErrMissingField, ErrWrongType,
		ErrUnknownCategory, ErrUnknownRetry, ErrEmptyValue, ErrOKContradicts} {
		if !kinds[e] {
			t.Errorf("no agreement case for %v", e)
		}
	}
}

// TestSchemaBeyond documents what the schema cannot see and Parse must
// catch: the schema validator either cannot read the input at all or reads
// it (duplicates: the last key wins) and accepts it.
func TestSchemaBeyond(t *testing.T) {
	compiledSchema(t)
	for _, tc := range parseCases() {
		if tc.err != ErrDuplicateField && tc.err != ErrTrailingData && tc.err != ErrSyntax && tc.err != ErrEmpty {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse([]byte(tc.in)); !errors.Is(err, tc.err) {
				t.Fatalf("Parse error = %v, want %v", err, tc.err)
			}
			parsed, _, _ := schemaAccepts(t, []byte(tc.in))
			if tc.err == ErrDuplicateField {
				if !parsed {
					t.Fatal("schema validator could not read a document with a duplicate key")
				}
				return // accepted or not depends on which duplicate is last
			}
			if parsed {
				t.Fatal("schema validator read a document Parse calls syntactically broken")
			}
		})
	}
}
