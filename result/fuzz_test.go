package result

import (
	"errors"
	"reflect"
	"testing"
)

var sentinels = []error{ErrTooLarge, ErrEmpty, ErrSyntax, ErrNotObject, ErrTrailingData, ErrUnknownField,
	ErrDuplicateField, ErrMissingField, ErrWrongType, ErrUnknownCategory, ErrUnknownRetry, ErrEmptyValue,
	ErrOKContradicts, ErrDuplicateHost, ErrInvalidOperationID}

// FuzzParse checks that Parse never panics, that its errors keep their
// promises, that what it accepts survives Marshal unchanged (hosts
// included), and that it agrees with the published JSON Schema in both
// directions wherever the schema can judge.
func FuzzParse(f *testing.F) {
	for _, tc := range parseCases() {
		if len(tc.in) <= 4096 { // the 1 MiB cases would slow every run
			f.Add([]byte(tc.in))
		}
	}
	// Marshal's own form of a fleet result (one line, no spaces).
	fl, err := fleet().Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fl)
	compiledSchema(f)

	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Parse(b)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T (%v) is not a *ParseError", err, err)
			}
			known := false
			for _, s := range sentinels {
				if pe.Unwrap() == s {
					known = true
				}
			}
			if !known {
				t.Fatalf("error %v does not unwrap to a sentinel", err)
			}
			if pe.Offset < -1 || pe.Offset > int64(len(b)) {
				t.Fatalf("offset %d outside the input (len %d): %v", pe.Offset, len(b), err)
			}
			if !reflect.DeepEqual(r, Result{}) {
				t.Fatalf("Parse returned %+v with error %v", r, err)
			}
			// Where the schema can judge, it must refuse too. It cannot see
			// duplicate keys (its reader keeps the last), duplicate hosts
			// or the size cap.
			if parsed, ok, _ := schemaAccepts(t, b); parsed && ok &&
				!errors.Is(err, ErrDuplicateField) && !errors.Is(err, ErrDuplicateHost) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("schema accepts %q but Parse says %v", b, err)
			}
			return
		}

		if verr := r.Validate(); verr != nil {
			t.Fatalf("Parse accepted %q but Validate says %v", b, verr)
		}
		if r.Hosts != nil && len(r.Hosts) == 0 {
			t.Fatalf("Parse returned an empty, non-nil Hosts for %q", b)
		}
		for i, h := range r.Hosts {
			if got, ok := r.Host(h.Host); !ok || got != h {
				t.Fatalf("Host(%q) = %+v, %t; want hosts[%d] %+v", h.Host, got, ok, i, h)
			}
		}
		if parsed, ok, serr := schemaAccepts(t, b); !parsed || !ok {
			t.Fatalf("Parse accepted %q but the schema refuses it: %v", b, serr)
		}
		out, err := r.Marshal()
		if err != nil {
			t.Fatalf("Marshal of accepted %+v: %v", r, err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(Marshal()) of %q: %v", out, err)
		}
		if !reflect.DeepEqual(back, r) {
			t.Fatalf("round trip changed the result:\n before %+v\n after  %+v", r, back)
		}
		if parsed, ok, serr := schemaAccepts(t, out); !parsed || !ok {
			t.Fatalf("schema refuses Marshal output %q: %v", out, serr)
		}
	})
}
