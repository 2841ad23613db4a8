package matrix

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/sshrig/sshrig/fault"
)

// TestMatrixDocValues: the value lists and defaults in docs/matrix.md's
// field table are the definitions' (package fault), in definition order.
func TestMatrixDocValues(t *testing.T) {
	doc, err := os.ReadFile("../docs/matrix.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{} // field -> its required, values and meaning cells
	row := regexp.MustCompile("^\\| `([a-z_]+)` \\|(.*)\\|$")
	for _, line := range strings.Split(string(doc), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			rows[m[1]] = strings.Split(m[2], " | ")
		}
	}
	values := func(field string) string {
		cells := rows[field]
		if len(cells) < 2 {
			t.Fatalf("docs/matrix.md has no row for %s", field)
		}
		return strings.TrimSpace(cells[1])
	}
	quoted := func(names []string) string { return "`" + strings.Join(names, "` `") + "`" }
	for _, tc := range []struct {
		field string
		want  []string
	}{
		{"moment", strings.Split(names(fault.Moments()), ", ")},
		{"cut", strings.Split(names(fault.Cuts()), ", ")},
		{"disposition", strings.Split(names(fault.Dispositions()), ", ")},
		{"credential", strings.Split(names(fault.Credentials()), ", ")},
		{"refusal", strings.Split(names(fault.Refusals()), ", ")},
		{"call", Calls()},
	} {
		if got, want := values(tc.field), quoted(tc.want); got != want {
			t.Errorf("docs/matrix.md, %s: values %s, want %s", tc.field, got, want)
		}
	}
	if got, want := rows["output_bytes"][0], fmt.Sprintf("no (default %d)", fault.DefaultOutputBytes); strings.TrimSpace(got) != want {
		t.Errorf("docs/matrix.md, output_bytes: %q, want %q", got, want)
	}
	if got, want := rows["disposition"][0], fmt.Sprintf("no (default `%s`)", Case{}.WithDefaults().Disposition); strings.TrimSpace(got) != want {
		t.Errorf("docs/matrix.md, disposition: %q, want %q", got, want)
	}
}
