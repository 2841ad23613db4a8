package tempdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
)

// Make creates a private directory for kind ("keys", "scratch", ...) in
// the system's temporary directory, named sshrig-KIND-PID-RANDOM.
func Make(kind string) (string, error) {
	return os.MkdirTemp("", fmt.Sprintf("sshrig-%s-%d-", kind, os.Getpid()))
}

// name is what Make names a directory: kind, the maker's pid, os.MkdirTemp's
// random digits.
var name = regexp.MustCompile(`^sshrig-([a-z]+(?:-[a-z]+)*)-([0-9]+)-[0-9]+$`)

// Orphan is a directory Make made for a process that no longer runs.
type Orphan struct {
	Path string
	Kind string
	PID  int
}

// Orphans lists the directories in dir ("" for the system's temporary
// directory) that Make made for processes that no longer run. A directory
// whose maker's pid now names another process is kept: it may be in use.
func Orphans(dir string) ([]Orphan, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Orphan
	for _, e := range entries {
		m := name.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		pid, err := strconv.Atoi(m[2])
		if err != nil || pid <= 0 || running(pid) {
			continue
		}
		out = append(out, Orphan{Path: filepath.Join(dir, e.Name()), Kind: m[1], PID: pid})
	}
	return out, nil
}

// running says whether a process of that pid exists (EPERM: it does, and
// is another user's).
func running(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
