package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
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

// def returns the definition "#/$defs/name" of the schema root.
func def(t *testing.T, root map[string]any, name string) map[string]any {
	t.Helper()
	defs, _ := root["$defs"].(map[string]any)
	d, ok := defs[name].(map[string]any)
	if !ok {
		t.Fatalf("schema has no $defs/%s", name)
	}
	return d
}

// resolve returns p with its "$ref" (only "#/$defs/..." is used) replaced
// by the keywords of the definition it names; p's own keywords win.
func resolve(t *testing.T, root, p map[string]any) map[string]any {
	t.Helper()
	ref, ok := p["$ref"].(string)
	if !ok {
		return p
	}
	name, local := strings.CutPrefix(ref, "#/$defs/")
	if !local {
		t.Fatalf("$ref %q is not a local definition", ref)
	}
	out := maps.Clone(def(t, root, name))
	for k, v := range p {
		if k != "$ref" {
			out[k] = v
		}
	}
	return out
}

// goFields reads the JSON names of struct type rt from its tags: all of
// them in order, the required ones (no omitempty), and each one's JSON type.
func goFields(t *testing.T, rt reflect.Type) (tagged, required []string, types map[string]string) {
	t.Helper()
	types = map[string]string{}
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
		case reflect.Slice:
			types[name] = "array"
		default:
			t.Fatalf("field %s.%s has kind %s; extend this test", rt.Name(), f.Name, f.Type.Kind())
		}
	}
	return tagged, required, types
}

// checkObject proves that obj, an object schema inside root, describes the
// same object as the Go struct rt and the parser's table: same properties,
// required list, types, enums, non-empty strings, and the ok rule.
func checkObject(t *testing.T, root, obj map[string]any, rt reflect.Type, table []field, nonEmpty []string) {
	if obj["type"] != "object" || obj["additionalProperties"] != false {
		t.Fatalf("want type object and additionalProperties false, got %v and %v", obj["type"], obj["additionalProperties"])
	}
	tagged, required, types := goFields(t, rt)

	t.Run("required", func(t *testing.T) {
		if got := strs(t, obj["required"]); !slices.Equal(got, required) {
			t.Fatalf("schema required = %v, struct tags say %v", got, required)
		}
	})

	t.Run("properties", func(t *testing.T) {
		props, _ := obj["properties"].(map[string]any)
		var got []string
		for k := range props {
			got = append(got, k)
		}
		if !sameSet(got, tagged) {
			t.Fatalf("schema properties = %v, struct tags = %v", got, tagged)
		}
		for name, typ := range types {
			p := resolve(t, root, property(t, obj, name))
			if p["type"] != typ {
				t.Errorf("schema type of %s = %v, Go type says %s", name, p["type"], typ)
			}
			if _, ok := property(t, obj, name)["description"].(string); !ok {
				t.Errorf("schema property %s has no description", name)
			}
		}
		for _, name := range nonEmpty {
			if ml, _ := property(t, obj, name)["minLength"].(float64); ml != 1 {
				t.Errorf("schema %s minLength = %v, want 1", name, ml)
			}
		}
	})

	t.Run("enums", func(t *testing.T) {
		for name, want := range map[string]string{"category": join(Categories()), "retry": join(Retries())} {
			p := resolve(t, root, property(t, obj, name))
			if got := strings.Join(strs(t, p["enum"]), ", "); got != want {
				t.Errorf("schema %s enum = %s\nGo = %s", name, got, want)
			}
		}
	})

	t.Run("ok agrees with category", func(t *testing.T) {
		want := map[string]any{
			"if":   map[string]any{"properties": map[string]any{"category": map[string]any{"const": string(Succeeded)}}, "required": []any{"category"}},
			"then": map[string]any{"properties": map[string]any{"ok": map[string]any{"const": true}}},
			"else": map[string]any{"properties": map[string]any{"ok": map[string]any{"const": false}}},
		}
		for k, w := range want {
			if !reflect.DeepEqual(obj[k], w) {
				t.Errorf("schema %s = %v, want %v", k, obj[k], w)
			}
		}
	})

	t.Run("parser field table", func(t *testing.T) {
		var names, req []string
		for _, f := range table {
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
	})

	t.Run("version", func(t *testing.T) {
		c, _ := m["$comment"].(string)
		want := "Contract version " + strconv.Itoa(ContractVersion) + ` adds the optional "operation_id"`
		if !strings.Contains(c, want) || !strings.Contains(c, `version 2 added the optional "hosts" array`) || !strings.Contains(c, "Results of earlier versions (without them) stay valid") {
			t.Fatalf("schema $comment = %q, want it to say %q, what version 2 added, and that earlier results stay valid", c, want)
		}
		if _, ok := property(t, m, "hosts")["type"]; !ok || ContractVersion < 2 {
			t.Fatalf("ContractVersion %d, but hosts came with version 2", ContractVersion)
		}
		if _, ok := property(t, m, "operation_id")["type"]; !ok || ContractVersion < 3 {
			t.Fatalf("ContractVersion %d, but operation_id came with version 3", ContractVersion)
		}
	})

	t.Run("category enum and meanings", func(t *testing.T) {
		d := def(t, m, "category")
		want := join(Categories())
		if got := strings.Join(strs(t, d["enum"]), ", "); got != want {
			t.Fatalf("schema category enum = %s\nCategories() = %s", got, want)
		}
		desc, _ := d["description"].(string)
		for _, c := range Categories() {
			if line := "- " + string(c) + ": " + c.Meaning(); !strings.Contains(desc, line) {
				t.Errorf("category description lacks %q", line)
			}
		}
	})

	t.Run("retry enum and meanings", func(t *testing.T) {
		d := def(t, m, "retry")
		want := join(Retries())
		if got := strings.Join(strs(t, d["enum"]), ", "); got != want {
			t.Fatalf("schema retry enum = %s\nRetries() = %s", got, want)
		}
		desc, _ := d["description"].(string)
		for _, r := range Retries() {
			if line := "- " + string(r) + ": " + r.Meaning(); !strings.Contains(desc, line) {
				t.Errorf("retry description lacks %q", line)
			}
		}
	})

	// The struct tags are what encoding/json writes, so they are the
	// ground truth the schema and the parser's field tables must match.
	t.Run("top level", func(t *testing.T) {
		checkObject(t, m, m, reflect.TypeFor[Result](), fields, []string{"operation", "correlation_id"})
	})

	t.Run("hosts", func(t *testing.T) {
		h := property(t, m, "hosts")
		if h["type"] != "array" {
			t.Fatalf("schema hosts type = %v, want array", h["type"])
		}
		if n, _ := h["minItems"].(float64); n != 1 {
			t.Errorf("schema hosts minItems = %v, want 1 (an empty hosts is refused)", h["minItems"])
		}
		if desc, _ := h["description"].(string); !strings.Contains(desc, "hosts must differ; sshrig rejects duplicates") {
			t.Errorf("schema hosts description does not say that hosts must differ: %q", desc)
		}
		if rt := reflect.TypeFor[Result](); func() reflect.Type { f, _ := rt.FieldByName("Hosts"); return f.Type.Elem() }() != reflect.TypeFor[HostResult]() {
			t.Fatal("Result.Hosts is not a slice of HostResult")
		}
		items, ok := h["items"].(map[string]any)
		if !ok {
			t.Fatalf("schema hosts items = %v, want an object schema", h["items"])
		}
		checkObject(t, m, resolve(t, m, items), reflect.TypeFor[HostResult](), hostFields, []string{"host"})
	})
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestSchemaAgreesWithParse runs the Parse table through the schema. For
// every document the schema can judge (one JSON value, no duplicate keys or
// hosts, within the size cap), both must give the same verdict.
func TestSchemaAgreesWithParse(t *testing.T) {
	compiledSchema(t)
	kinds, hostKinds := map[error]bool{}, map[error]bool{}
	for _, tc := range parseCases() {
		if beyondSchema[tc.err] {
			continue
		}
		kinds[tc.err] = true
		if strings.HasPrefix(tc.field, "hosts") || (tc.err == nil && tc.want != nil && tc.want.Hosts != nil) {
			hostKinds[tc.err] = true
		}
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
	// Every kind the schema can express must be covered by the table, at
	// the top level and (but for the shape of the whole) in hosts.
	for _, e := range []error{nil, ErrNotObject, ErrUnknownField, ErrMissingField, ErrWrongType,
		ErrUnknownCategory, ErrUnknownRetry, ErrEmptyValue, ErrOKContradicts, ErrInvalidOperationID} {
		if !kinds[e] {
			t.Errorf("no agreement case for %v", e)
		}
		if e == ErrInvalidOperationID {
			continue // a hosts entry has no operation id
		}
		if !hostKinds[e] && e != ErrNotObject {
			t.Errorf("no agreement case for %v in hosts", e)
		}
	}
}

// beyondSchema holds the violations a JSON Schema cannot express: the
// validator reads JSON into a map first, so it never sees the first five,
// and no keyword makes one property unique across array items.
var beyondSchema = map[error]bool{ErrEmpty: true, ErrSyntax: true, ErrTrailingData: true,
	ErrDuplicateField: true, ErrTooLarge: true, ErrDuplicateHost: true}

// TestSchemaBeyond documents what the schema cannot see and Parse must
// catch: the schema validator either cannot read the input at all, or reads
// it (duplicate keys: the last one wins) and accepts it or not depending on
// which duplicate is last, or reads it and accepts it (duplicate hosts).
func TestSchemaBeyond(t *testing.T) {
	compiledSchema(t)
	seen := map[error]bool{}
	dupAccepted := 0
	for _, tc := range parseCases() {
		if tc.err != ErrDuplicateField && tc.err != ErrTrailingData && tc.err != ErrSyntax && tc.err != ErrEmpty &&
			tc.err != ErrDuplicateHost {
			continue
		}
		seen[tc.err] = true
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse([]byte(tc.in)); !errors.Is(err, tc.err) {
				t.Fatalf("Parse error = %v, want %v", err, tc.err)
			}
			parsed, ok, serr := schemaAccepts(t, []byte(tc.in))
			switch tc.err {
			case ErrDuplicateField:
				if !parsed {
					t.Fatal("schema validator could not read a document with a duplicate key")
				}
				// accepted or not depends on which duplicate is last
			case ErrDuplicateHost:
				if !parsed {
					t.Fatal("schema validator could not read a document with a duplicate host")
				}
				// The schema cannot tell it from the same document with
				// every host made unique, and on that one it agrees with
				// Parse: so it judges everything but the duplicate.
				uniq, uok := schemaAcceptsUniqueHosts(t, []byte(tc.in))
				if ok != uok {
					t.Fatalf("schema says %t, but %t once hosts are unique (%v)", ok, uok, serr)
				}
				if _, perr := Parse(uniq); (perr == nil) != uok {
					t.Fatalf("with unique hosts the schema says %t but Parse says %v\n%s", uok, perr, uniq)
				}
				if ok {
					dupAccepted++
				}
			default:
				if parsed {
					t.Fatal("schema validator read a document Parse calls syntactically broken")
				}
			}
		})
	}
	for e := range beyondSchema {
		if !seen[e] && e != ErrTooLarge { // the 1 MiB cases are in TestParse
			t.Errorf("no case for %v beyond the schema", e)
		}
	}
	if dupAccepted == 0 {
		t.Error("no case shows the schema accepting a document whose only fault is a duplicate host")
	}
}

// schemaAcceptsUniqueHosts reads b (one JSON object the validator can read)
// as the validator does, gives each non-empty host of hosts a name of its
// own, and returns that document and whether the schema accepts it.
func schemaAcceptsUniqueHosts(t *testing.T, b []byte) ([]byte, bool) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	obj, _ := inst.(map[string]any)
	hosts, _ := obj["hosts"].([]any)
	for i, e := range hosts {
		if m, ok := e.(map[string]any); ok {
			if h, ok := m["host"].(string); ok && h != "" {
				m["host"] = "unique-" + strconv.Itoa(i)
			}
		}
	}
	out, err := json.Marshal(inst)
	if err != nil {
		t.Fatal(err)
	}
	return out, compiledSchema(t).Validate(inst) == nil
}
