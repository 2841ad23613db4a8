package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sync"

	"github.com/sshrig/sshrig/internal/control"
)

// What a cut upload left on the host. A step case that cuts an upload
// (fault.Step.UploadBytes) keeps the bytes before the cut and drops the
// rest; what the file then holds depends on the copier (OpenSSH's SFTP
// server writes each write as it comes, scp -t writes whole blocks and may
// write none) and on what the tool does afterwards (removes it, uploads it
// again, renames it). So the server measures it once, as the case ends and
// before its host is removed, and says it in one UploadState event.

// uploads is what a case's uploads did to its host, as much as the state
// of a cut upload needs: which upload was cut, and which files an upload
// began and never finished.
type uploads struct {
	mu  sync.Mutex
	cut *cutUpload // the upload the case cut; nil until then
	// unfinished are the files (paths relative to the host's top) an
	// upload began and did not finish: an SFTP handle opened for writing
	// and not closed by the client, or scp -t's file before it exited 0.
	unfinished map[string]bool
}

// cutUpload is the upload a case cut.
type cutUpload struct {
	named   string // as the tool named it
	rel     string // relative to the host's top; "" when outside it
	outside string // why the file is out of the host's reach, when rel is ""
	arrived int64  // bytes of the file that reached the server
	// rewritten: an upload of the same name finished after the cut.
	rewritten bool
}

// began records that an upload began writing rel.
func (u *uploads) began(rel string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.unfinished == nil {
		u.unfinished = map[string]bool{}
	}
	u.unfinished[rel] = true
}

// finished records that an upload of rel finished: whatever was cut there
// before was written over.
func (u *uploads) finished(rel string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.unfinished, rel)
	if u.cut != nil && u.cut.rel == rel {
		u.cut.rewritten = true
	}
}

// renamed records a rename from one file to another (toNamed, as the tool
// named it): a finished upload renamed onto the cut file's name replaces
// it; the cut file renamed elsewhere is now there.
func (u *uploads) renamed(from, to, toNamed string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.unfinished[from] {
		delete(u.unfinished, from)
		u.unfinished[to] = true
	}
	switch c := u.cut; {
	case c == nil:
	case c.rel == from:
		c.rel, c.named = to, toNamed
	case c.rel == to:
		c.rewritten = true
	}
}

// cutAt records the upload the case cut: the file the tool named (rel in
// the host's tree, or outside it for the reason relErr), after arrived of
// its bytes reached the server.
func (u *uploads) cutAt(named, rel string, relErr error, arrived int64) {
	c := &cutUpload{named: named, rel: rel, arrived: arrived}
	if relErr != nil {
		c.rel, c.outside = "", relErr.Error()
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cut == nil {
		u.cut = c
	}
}

// state measures what the cut upload left in the host whose top is top;
// nil when the case cut no upload.
func (u *uploads) state(top string) *control.Upload {
	u.mu.Lock()
	defer u.mu.Unlock()
	c := u.cut
	if c == nil {
		return nil
	}
	st := &control.Upload{Path: c.named, Arrived: c.arrived, Rewritten: c.rewritten}
	if c.rel == "" {
		st.Absent = "outside the case's host: " + c.outside
		return st
	}
	root, err := os.OpenRoot(top)
	if err != nil {
		st.Absent = "the case's host: " + err.Error()
		return st
	}
	defer root.Close()
	st.Size, st.SHA256, st.Absent = measure(root, c.rel)
	dir := path.Dir(c.rel)
	for rel := range u.unfinished {
		if rel == c.rel || path.Dir(rel) != dir {
			continue
		}
		if info, err := root.Lstat(rel); err == nil && info.Mode().IsRegular() {
			st.TempFiles = append(st.TempFiles, path.Base(rel))
		}
	}
	slices.Sort(st.TempFiles)
	return st
}

// measure reads a file in root: its size and SHA-256, or why there is no
// file to read (it is gone, or not a regular file).
func measure(root *os.Root, rel string) (size int64, sum, absent string) {
	info, err := root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, "", "no file there: the tool removed it, or it was never created"
	case err != nil:
		return 0, "", err.Error()
	case !info.Mode().IsRegular():
		return 0, "", "not a regular file: " + info.Mode().Type().String()
	}
	f, err := root.Open(rel)
	if err != nil {
		return 0, "", err.Error()
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", err.Error()
	}
	return n, hex.EncodeToString(h.Sum(nil)), ""
}

// emitUploadState says what the case's cut upload left on its host, if it
// cut one. The case's handlers have all returned: nothing writes there any
// more.
func (s *Server) emitUploadState(c *caseState) {
	if st := c.uploads.state(c.host.top()); st != nil {
		s.emit(control.Event{Kind: control.UploadState, Case: c.id, Upload: st})
	}
}
