package report

import (
	"strings"
	"testing"
)

// A run on the kernel network says so among the suite's properties.
func TestJUnitNamesTheNetwork(t *testing.T) {
	b, err := (&Report{Tool: "reference", Target: "embedded", Net: "kernel"}).JUnit()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `<property name="net" value="kernel"></property>`) {
		t.Fatalf("no net property:\n%s", b)
	}
}
