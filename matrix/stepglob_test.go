package matrix

import (
	"path"
	"testing"
)

func TestCanMatchStepCase(t *testing.T) {
	for glob, want := range map[string]bool{
		"step.*":                      true,
		"step.1*":                     true,
		"step.0[1-3]-*.reset":         true,
		"*.blackhole":                 true,
		"s?ep.*":                      true,
		"*":                           true,
		"step.02-exec.reset":          true,
		"step.upload-64B.blackhole":   true,
		"*reset":                      true,
		"step\\.*":                    true,
		"no-such-case":                false,
		"nothing.*":                   false,
		"zzz":                         false,
		"step.":                       false,
		"step.*.survive":              false,
		"step..reset":                 false,
		"step.a.b.reset":              false,
		"step.*.reset.*":              false,
		"steps.*":                     false,
		"*.reset.survive":             false,
		"step.[^a-zA-Z0-9_\\-].reset": false, // a valid class (Go negates with ^) outside the name's alphabet
		"step.*/x.reset":              false,
	} {
		if _, err := path.Match(glob, ""); err != nil {
			t.Fatalf("%q is not a valid glob (%v): SplitSelection refuses it before this", glob, err)
		}
		if got := CanMatchStepCase(glob); got != want {
			t.Errorf("CanMatchStepCase(%q) = %v, want %v", glob, got, want)
		}
	}
}

func FuzzCanMatchStepCase(f *testing.F) {
	for _, s := range []string{"step.*", "*.reset", "[", "\\", "step.[a-", "no"} {
		f.Add(s)
	}
	ids := []string{"step.02-exec.reset", "step.05-sftp-write.blackhole", "step.upload-64B.reset", "step.11-keepalive-openssh-com.blackhole"}
	f.Fuzz(func(t *testing.T, glob string) {
		if _, err := path.Match(glob, ""); err != nil {
			return // SplitSelection has refused it already
		}
		got := CanMatchStepCase(glob)
		for _, id := range ids {
			if ok, _ := path.Match(glob, id); ok && !got {
				t.Fatalf("%q matches the step case %s, but CanMatchStepCase says it cannot match one", glob, id)
			}
		}
	})
}
