package testpeer

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
)

// RequireEnv names the variable that, set to 1, turns a missing program's
// skip into a failure.
const RequireEnv = "SSHRIG_REQUIRE_PEERS"

// debian maps each program the tests run to the Debian package that
// installs it.
var debian = map[string]string{
	"ssh":             "openssh-client",
	"sftp":            "openssh-client",
	"scp":             "openssh-client",
	"ssh-keygen":      "openssh-client",
	"plink":           "putty-tools",
	"puttygen":        "putty-tools",
	"dbclient":        "dropbear-bin",
	"dropbearconvert": "dropbear-bin",
	"chromium":        "chromium",
	"shellcheck":      "shellcheck",
	"dash":            "dash",
	"bash":            "bash",
	"busybox":         "busybox-static",
	"ansible":         "ansible-core",
}

// Programs lists the programs Package knows, sorted.
func Programs() []string {
	var out []string
	for p := range debian {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Package is the Debian package that installs program ("" if unknown).
func Package(program string) string { return debian[program] }

// Required says whether a missing program fails a test (RequireEnv=1)
// rather than skipping it.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Lookup finds program on PATH; its error says what to install.
func Lookup(program string) (string, error) {
	path, err := exec.LookPath(program)
	if err == nil {
		return path, nil
	}
	pkg := Package(program)
	if pkg == "" {
		return "", fmt.Errorf("%s is not installed", program)
	}
	return "", fmt.Errorf("%s is not installed (on Debian: apt-get install -y %s)", program, pkg)
}

// Need returns the path of each program, in order, or ends the test at the
// first that is missing: a skip that names its Debian package, or, with
// SSHRIG_REQUIRE_PEERS=1, a failure.
func Need(t testing.TB, programs ...string) []string {
	t.Helper()
	var paths []string
	for _, p := range programs {
		path, err := Lookup(p)
		if err != nil {
			Missing(t, err)
		}
		paths = append(paths, path)
	}
	return paths
}

// Missing ends the test for a peer that is not there: a skip saying err,
// or with SSHRIG_REQUIRE_PEERS=1 a failure.
func Missing(t testing.TB, err error) {
	t.Helper()
	if Required() {
		t.Fatalf("%s=1, but %v", RequireEnv, err)
		return
	}
	t.Skip(err)
}
