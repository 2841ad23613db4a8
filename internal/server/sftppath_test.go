package server

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzSFTPPath: whatever path a client sends, the SFTP server either
// refuses it or names a place inside the case's tree, in its home or its
// /tmp, and never the rig's scratch directory outside the home.
func FuzzSFTPPath(f *testing.F) {
	const scratch = "/tmp/sshrig-scratch-1"
	host := caseHost{tree: scratch + "/hosts/c-1", home: scratch + "/hosts/c-1/home", tmp: scratch + "/hosts/c-1/tmp"}
	for _, p := range []string{"/", ".", "job.sh", "/tmp", "/tmp/job.sh", "/tmp/../etc/passwd", host.home, host.home + "/../../c-2/home/x",
		scratch, scratch + "/ledger", "/tmp/sshrig-scratch-1/hosts/c-2/tmp/x", "/etc/passwd", "/tmp//a/./b", "~/x"} {
		f.Add(p)
	}
	h := &sftpFS{host: host, scratch: scratch}
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := h.rel(p)
		if err != nil {
			return
		}
		if !filepath.IsLocal(rel) {
			t.Fatalf("rel(%q) = %q, not inside the tree", p, rel)
		}
		if rel != "home" && rel != "tmp" && !strings.HasPrefix(rel, "home/") && !strings.HasPrefix(rel, "tmp/") {
			t.Fatalf("rel(%q) = %q, neither the home nor /tmp", p, rel)
		}
		if clean := filepath.Clean(p); clean == scratch || (strings.HasPrefix(clean, scratch+"/") && !strings.HasPrefix(clean, host.home)) {
			t.Fatalf("rel(%q) = %q: the scratch directory is the rig's", p, rel)
		}
	})
}
