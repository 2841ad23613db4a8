package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/sftp"

	"github.com/sshrig/sshrig/internal/control"
)

// runSFTP serves the sftp subsystem with github.com/pkg/sftp's request
// server. It starts in the case's home; paths are those the case's commands
// see, translated into the case's tree (home and /tmp) and confined to it
// through an os.Root: what a tool uploads is where a later exec finds it,
// and nothing outside the case's host can be reached. Every request is a
// step of the conversation.
func (ss *sessionState) runSFTP() {
	s, c, tc := ss.s, ss.c, ss.tc
	defer close(ss.handler)
	defer c.work.leave() // entered in serve
	defer ss.ch.Close()
	top := c.host.tree
	if top == "" {
		top = c.host.home
	}
	root, err := os.OpenRoot(top)
	if err != nil {
		s.emit(control.Event{Kind: control.ServerProblem, Case: c.id, Conn: tc.n, Session: ss.id, Detail: "sftp: " + err.Error()})
		return
	}
	defer root.Close()
	h := &sftpFS{ss: ss, root: root, host: c.host, scratch: s.scratch}
	// The request server closes what it serves when the client is done;
	// the channel must stay open for the exit status sshd sends.
	rs := sftp.NewRequestServer(&keepOpen{ReadWriter: ss.ch, ended: &h.clientGone}, sftp.Handlers{FileGet: h, FilePut: h, FileCmd: h, FileList: h},
		sftp.WithStartDirectory(c.host.home))
	serveErr := rs.Serve()
	// Serve closes every handle the client left open.
	rs.Close()
	h.closeAll()
	if serveErr != nil && !errors.Is(serveErr, io.EOF) {
		s.emit(control.Event{Kind: control.ServerProblem, Case: c.id, Conn: tc.n, Session: ss.id, Detail: "sftp: " + serveErr.Error()})
	}
	// sshd reports the exit status of its sftp-server.
	s.sendExit(ss.ch, c, tc, ss.id, exitInfo{code: 0}, false)
}

// keepOpen hides the channel's Close from the request server, and says
// when the client's side ended.
type keepOpen struct {
	io.ReadWriter
	ended *atomic.Bool
}

func (k *keepOpen) Read(b []byte) (int, error) {
	n, err := k.ReadWriter.Read(b)
	if err != nil {
		k.ended.Store(true)
	}
	return n, err
}

func (*keepOpen) Close() error { return nil }

// sftpFS implements pkg/sftp's handlers on a case's host.
type sftpFS struct {
	ss      *sessionState
	root    *os.Root // the case's tree (the scratch directory, shared)
	host    caseHost
	scratch string

	mu   sync.Mutex
	open map[*sftpFile]bool
	// clientGone: the client's side of the channel ended. A handle the
	// request server closes after that is its cleanup, not a request of
	// the tool's: the conversation does not show it.
	clientGone atomic.Bool
}

// rel maps an SFTP path (absolute, cleaned by the library) into the root
// (caseHost.treePath).
func (h *sftpFS) rel(p string) (string, error) { return h.host.treePath(p, h.scratch) }

// step records an SFTP request with how it ended.
func (h *sftpFS) step(r *sftp.Request, err error, detail string) {
	if detail == "" {
		detail = r.Filepath
	}
	if err != nil {
		detail += ": " + err.Error()
	}
	method := strings.ToLower(r.Method)
	if method == "get" || method == "put" {
		method = "open" // the library names an open by what the handle is for
	}
	ss := h.ss
	_, _, armed := ss.s.emitRequest(ss.c, ss.tc, ss.id, control.StepSFTPPrefix+method, err == nil, detail)
	ss.s.holdStep(ss.c, ss.tc, ss.id, armed)
}

func (h *sftpFS) Fileread(r *sftp.Request) (io.ReaderAt, error) {
	f, err := h.openFile(r, os.O_RDONLY)
	h.step(r, err, r.Filepath+" (read)")
	return f, err
}

func (h *sftpFS) Filewrite(r *sftp.Request) (io.WriterAt, error) {
	pf := r.Pflags()
	flag := os.O_WRONLY
	if pf.Read {
		flag = os.O_RDWR
	}
	if pf.Append {
		flag |= os.O_APPEND
	}
	if pf.Creat {
		flag |= os.O_CREATE
	}
	if pf.Trunc {
		flag |= os.O_TRUNC
	}
	if pf.Excl {
		flag |= os.O_EXCL
	}
	f, err := h.openFile(r, flag)
	h.step(r, err, r.Filepath+" (write)")
	return f, err
}

func (h *sftpFS) openFile(r *sftp.Request, flag int) (*sftpFile, error) {
	rel, err := h.rel(r.Filepath)
	if err != nil {
		return nil, err
	}
	f, err := h.root.OpenFile(rel, flag, 0o644)
	if err != nil {
		return nil, err
	}
	sf := &sftpFile{h: h, f: f, path: r.Filepath, rel: rel, writing: flag&(os.O_WRONLY|os.O_RDWR) != 0}
	if sf.writing {
		h.ss.c.uploads.began(rel)
	}
	h.mu.Lock()
	if h.open == nil {
		h.open = map[*sftpFile]bool{}
	}
	h.open[sf] = true
	h.mu.Unlock()
	return sf, nil
}

// closeAll closes what the library did not (a handle it never saw closed).
func (h *sftpFS) closeAll() {
	h.mu.Lock()
	files := make([]*sftpFile, 0, len(h.open))
	for f := range h.open {
		files = append(files, f)
	}
	h.mu.Unlock()
	for _, f := range files {
		f.f.Close()
	}
}

func (h *sftpFS) Filecmd(r *sftp.Request) error {
	err := h.filecmd(r)
	detail := r.Filepath
	if r.Target != "" {
		detail += " -> " + r.Target
	}
	h.step(r, err, detail)
	return err
}

func (h *sftpFS) filecmd(r *sftp.Request) error {
	rel, err := h.rel(r.Filepath)
	if err != nil {
		return err
	}
	switch r.Method {
	case "Setstat":
		flags, attrs := r.AttrFlags(), r.Attributes()
		if flags.Size {
			f, err := h.root.OpenFile(rel, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			err = f.Truncate(int64(attrs.Size))
			f.Close()
			if err != nil {
				return err
			}
		}
		if flags.Permissions {
			if err := h.root.Chmod(rel, attrs.FileMode().Perm()); err != nil {
				return err
			}
		}
		if flags.Acmodtime {
			if err := h.root.Chtimes(rel, attrs.AccessTime(), attrs.ModTime()); err != nil {
				return err
			}
		}
		return nil
	case "Rename", "PosixRename":
		to, err := h.rel(r.Target)
		if err != nil {
			return err
		}
		if err := h.root.Rename(rel, to); err != nil {
			return err
		}
		h.ss.c.uploads.renamed(rel, to, r.Target)
		return nil
	case "Rmdir", "Remove":
		return h.root.Remove(rel)
	case "Mkdir":
		return h.root.Mkdir(rel, 0o755)
	case "Symlink":
		// The link's target is stored as given; the root confines where
		// following it can lead.
		to, err := h.rel(r.Target)
		if err != nil {
			return err
		}
		return h.root.Symlink(r.Filepath, to)
	case "Link":
		to, err := h.rel(r.Target)
		if err != nil {
			return err
		}
		return h.root.Link(rel, to)
	}
	return sftp.ErrSSHFxOpUnsupported
}

func (h *sftpFS) Filelist(r *sftp.Request) (sftp.ListerAt, error) {
	l, err := h.filelist(r)
	h.step(r, err, "")
	return l, err
}

func (h *sftpFS) filelist(r *sftp.Request) (sftp.ListerAt, error) {
	rel, err := h.rel(r.Filepath)
	if err != nil {
		return nil, err
	}
	switch r.Method {
	case "List":
		entries, err := fs.ReadDir(h.root.FS(), rel)
		if err != nil {
			return nil, err
		}
		infos := make(listerAt, 0, len(entries))
		for _, e := range entries {
			if info, err := e.Info(); err == nil {
				infos = append(infos, info)
			}
		}
		return infos, nil
	case "Stat":
		info, err := h.root.Stat(rel)
		if err != nil {
			return nil, err
		}
		return listerAt{info}, nil
	case "Lstat":
		info, err := h.root.Lstat(rel)
		if err != nil {
			return nil, err
		}
		return listerAt{info}, nil
	case "Readlink":
		target, err := h.root.Readlink(rel)
		if err != nil {
			return nil, err
		}
		return listerAt{linkInfo(filepath.Clean(target))}, nil
	}
	return nil, sftp.ErrSSHFxOpUnsupported
}

// sftpFile is an open file; every write and the close are steps.
type sftpFile struct {
	h       *sftpFS
	f       *os.File
	path    string // as the tool named it
	rel     string // in the case's tree
	writing bool   // opened for writing: an upload
	// arrived counts the bytes written through the handle; cut says a
	// step case cut the upload in it. The request server hands writes to
	// several workers at once: mu orders a handle's.
	mu      sync.Mutex
	arrived int64
	cut     bool
}

func (f *sftpFile) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }

// WriteAt writes and records the write. For a step case that cuts the
// upload after N bytes, the write that carries byte N keeps only the bytes
// up to it (the rest never arrived, as far as the file is concerned), the
// server holds for the cut, and the write fails: the file is left partial,
// as a transfer cut off in the middle leaves it. Writes the client had
// already sent on the handle are dropped as well.
func (f *sftpFile) WriteAt(p []byte, off int64) (int, error) {
	ss := f.h.ss
	f.mu.Lock()
	if f.cut {
		f.mu.Unlock()
		err := errUploadCut
		_, _, armed := ss.s.emitRequest(ss.c, ss.tc, ss.id, control.StepSFTPPrefix+"write", false, fmt.Sprintf("%s @%d: %v", f.path, off, err))
		ss.s.holdStep(ss.c, ss.tc, ss.id, armed)
		return 0, err
	}
	keep, cut := ss.c.uploadCut(len(p))
	n, err := f.f.WriteAt(p[:keep], off)
	f.arrived += int64(n)
	f.cut = cut
	arrived := f.arrived
	f.mu.Unlock()
	detail := fmt.Sprintf("%s @%d +%d", f.path, off, n)
	if cut {
		ss.c.uploads.cutAt(f.path, f.rel, nil, arrived)
		// The hold comes first: the cut lands once the bytes arrived,
		// and the failed write is recorded after it.
		ss.s.reach(ss.c, ss.tc, ss.id, ss.c.arm.Moment)
		detail = fmt.Sprintf("%s: %s, %d of them in this write at offset %d", f.path, control.UploadCut(ss.c.arm.Step.UploadBytes), n, off)
		if err == nil {
			err = errUploadCut
		}
	} else if err != nil {
		detail += ": " + err.Error()
	}
	_, _, armed := ss.s.emitRequest(ss.c, ss.tc, ss.id, control.StepSFTPPrefix+"write", err == nil, detail)
	ss.s.holdStep(ss.c, ss.tc, ss.id, armed)
	return n, err
}

// errUploadCut fails the write a step case cut an upload in.
var errUploadCut = errors.New("upload cut: the rest of the write never arrived")

// Close closes the file; a client's close of an upload it wrote to the end
// finishes that upload.
func (f *sftpFile) Close() error {
	f.h.mu.Lock()
	delete(f.h.open, f)
	f.h.mu.Unlock()
	err := f.f.Close()
	if f.h.clientGone.Load() {
		return err
	}
	ss := f.h.ss
	f.mu.Lock()
	finished := err == nil && f.writing && !f.cut
	f.mu.Unlock()
	if finished {
		ss.c.uploads.finished(f.rel)
	}
	detail := f.path
	if err != nil {
		detail += ": " + err.Error()
	}
	_, _, armed := ss.s.emitRequest(ss.c, ss.tc, ss.id, control.StepSFTPPrefix+"close", err == nil, detail)
	ss.s.holdStep(ss.c, ss.tc, ss.id, armed)
	return err
}

type listerAt []os.FileInfo

func (l listerAt) ListAt(dst []os.FileInfo, off int64) (int, error) {
	if off >= int64(len(l)) {
		return 0, io.EOF
	}
	n := copy(dst, l[off:])
	if n < len(dst) {
		return n, io.EOF
	}
	return n, nil
}

// linkInfo carries a link's target as its name, as pkg/sftp's Readlink expects.
type linkInfo string

func (l linkInfo) Name() string       { return string(l) }
func (l linkInfo) Size() int64        { return 0 }
func (l linkInfo) Mode() fs.FileMode  { return fs.ModeSymlink }
func (l linkInfo) ModTime() time.Time { return time.Time{} }
func (l linkInfo) IsDir() bool        { return false }
func (l linkInfo) Sys() any           { return nil }
