package testpeer

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
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
	"parallel-ssh":    "pssh",
	// A Python library, not a program: Lookup finds it by importing it
	// with Debian's python3 (pythonModule).
	"python3-asyncssh": "python3-asyncssh",
}

// pythonModule is, for a peer that is a Debian Python library
// ("python3-NAME"), the module to import; "" for a program.
func pythonModule(peer string) string {
	if m, ok := strings.CutPrefix(peer, "python3-"); ok {
		return m
	}
	return ""
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
	if m := pythonModule(program); m != "" {
		// Debian's interpreter, which its python3-* packages install for.
		if exec.Command("/usr/bin/python3", "-c", "import "+m).Run() == nil {
			return "/usr/bin/python3", nil
		}
	} else if path, err := exec.LookPath(program); err == nil {
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
