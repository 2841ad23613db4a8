package main

import (
	"os"
	"path/filepath"
)

// pointLatest makes base/latest a symbolic link to the newest run directory
// (relative, so the tree can move). It is replaced atomically by a rename, so
// a reader never finds it missing; failing to set it costs nothing but the
// convenience.
func pointLatest(base, runDir string) {
	tmp := filepath.Join(base, ".latest.tmp")
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(runDir), tmp); err != nil {
		return
	}
	if err := os.Rename(tmp, filepath.Join(base, "latest")); err != nil {
		os.Remove(tmp)
	}
}
