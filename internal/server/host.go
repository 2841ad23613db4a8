package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sshrig/sshrig/internal/server/hostsetup"
)

// Every case its own host: a case's commands and SFTP requests see a
// filesystem of the case's own, as a tool sees a fresh host. Each case has a
// tree in the scratch directory, hosts/<case>/, with
//
//   - home: the commands' working directory and $HOME, and where SFTP starts
//     (so relative paths and ~ name files there);
//   - tmp: the case's /tmp.
//
// SFTP translates paths into the tree (sftp.go). Commands see it through a
// private mount namespace, where the case's tmp is bind-mounted over /tmp
// (package hostsetup); where namespaces are not available, commands get the
// case's home and TMPDIR but share the machine's /tmp, and the server says
// so in its startup information (HostModel). The rig's probe, and cases set
// up with control.Request.SharedHost, run in the scratch directory itself,
// as every case did before: one host whose state a sequence of cases shares.

// hostsDir is the directory of the case trees in the scratch directory.
const hostsDir = "hosts"

// caseHost is the remote filesystem a case sees.
type caseHost struct {
	tree string // the case's own tree, removed at its end; "" for the shared host
	home string // working directory and $HOME
	tmp  string // the case's /tmp; "" for the shared host (the machine's)
	// privateTmp: the case's commands see tmp as /tmp (a mount namespace),
	// so SFTP maps /tmp there too; without one (noNamespace) commands get
	// tmp as $TMPDIR only and SFTP's /tmp is the machine's, as theirs is.
	privateTmp bool
	// thread, in threadNamespace mode, starts the case's commands from
	// inside its mount namespace.
	thread *nsThread
}

// close ends the case's namespace thread and removes its tree: every
// command of the case has been reaped.
func (h caseHost) close() error {
	if h.thread != nil {
		h.thread.close()
	}
	if h.tree == "" {
		return nil
	}
	if os.RemoveAll(h.tree) == nil {
		return nil
	}
	// A directory a command made unwritable keeps its entries from a
	// server that is not root: open every directory up, then remove.
	filepath.WalkDir(h.tree, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(h.tree)
}

// top is the directory a case's files live in: its tree, or, for the
// shared host, the home.
func (h caseHost) top() string {
	if h.tree != "" {
		return h.tree
	}
	return h.home
}

// treePath maps an absolute path, as the case's commands and SFTP see it,
// to one relative to top: the home, and on a host of the case's own, /tmp.
// Anything else is refused, as an unprivileged user's writes there would
// be; so is the rig's scratch directory (the ledger), wherever it lies.
func (h caseHost) treePath(p, scratch string) (string, error) {
	p = path.Clean(p)
	home := "."
	if h.tree != "" {
		home = "home"
	}
	if p == h.home {
		return home, nil
	}
	if rel, ok := strings.CutPrefix(p, h.home+"/"); ok {
		return path.Join(home, rel), nil
	}
	inScratch := p == scratch || strings.HasPrefix(p, scratch+"/")
	if h.privateTmp && !inScratch {
		if p == "/tmp" {
			return "tmp", nil
		}
		if rel, ok := strings.CutPrefix(p, "/tmp/"); ok {
			return path.Join("tmp", rel), nil
		}
	}
	return "", fmt.Errorf("%s: %w (outside this host's %s)", p, os.ErrPermission, h.where())
}

// where names what a case's SFTP can reach.
func (h caseHost) where() string {
	if h.privateTmp {
		return h.home + " and /tmp"
	}
	return h.home
}

// caseTree is where case id's tree lies in the scratch directory.
func (s *Server) caseTree(id string) caseHost {
	tree := filepath.Join(s.scratch, hostsDir, id)
	return caseHost{tree: tree, home: filepath.Join(tree, "home"), tmp: filepath.Join(tree, "tmp"), privateTmp: s.ns != noNamespace}
}

// newCaseHost creates a case's tree under the scratch directory.
func (s *Server) newCaseHost(id string) (h caseHost, err error) {
	h = s.caseTree(id)
	tree := h.tree
	if err := os.MkdirAll(filepath.Dir(tree), 0o755); err != nil {
		return caseHost{}, err
	}
	if err := os.Mkdir(tree, 0o755); err != nil {
		return caseHost{}, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tree)
		}
	}()
	for _, d := range []string{h.home, h.tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return caseHost{}, err
		}
	}
	// As /tmp is: anyone may create, only the owner may remove.
	if err := os.Chmod(h.tmp, os.ModePerm|os.ModeSticky); err != nil {
		return caseHost{}, err
	}
	if s.ns == threadNamespace {
		if h.thread, err = startNSThread(h.tmp, s.keep); err != nil {
			return caseHost{}, fmt.Errorf("its mount namespace: %w", err)
		}
	}
	return h, nil
}

// adoptCaseHost is the case's tree as a server before this one left it
// (newCaseHost made it; the host restarted since): its files are the case's,
// only its namespace thread is new.
func (s *Server) adoptCaseHost(id string) (h caseHost, err error) {
	h = s.caseTree(id)
	for _, d := range []string{h.home, h.tmp} {
		if fi, err := os.Stat(d); err != nil {
			return caseHost{}, err
		} else if !fi.IsDir() {
			return caseHost{}, fmt.Errorf("%s is not a directory", d)
		}
	}
	if s.ns == threadNamespace {
		if h.thread, err = startNSThread(h.tmp, s.keep); err != nil {
			return caseHost{}, fmt.Errorf("its mount namespace: %w", err)
		}
	}
	return h, nil
}

// sharedHost is the host of the probe and of shared-host cases.
func (s *Server) sharedHost() caseHost { return caseHost{home: s.scratch} }

// namespaceMode is how commands get a private /tmp.
type namespaceMode int

const (
	noNamespace namespaceMode = iota // fallback: the machine's /tmp, shared
	// threadNamespace (root): each case has an OS thread of the server's
	// own in a private mount namespace, and its commands are forked from
	// that thread. A command costs nothing more than without a namespace.
	threadNamespace
	// userNamespace (not root): each command is forked into new user and
	// mount namespaces through the set-up step (package hostsetup): a
	// process cannot enter a user namespace from one thread of many.
	userNamespace
)

// apply adds the mode's namespaces to a command's attributes, for the
// set-up step.
func (m namespaceMode) apply(attr *syscall.SysProcAttr) {
	switch m {
	case userNamespace:
		// Root of its own user namespace, mapped to the server's user: the
		// set-up step may mount, and what the command creates is the
		// server's user's outside.
		attr.Cloneflags = syscall.CLONE_NEWNS | syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
}

func (m namespaceMode) String() string {
	switch m {
	case threadNamespace:
		return "a mount namespace per case"
	case userNamespace:
		return "user and mount namespaces per command"
	}
	return "none"
}

// chooseNamespaces finds the first namespace mode in which the set-up step
// works on this machine, by running it once: a command that must find a
// file only the private /tmp has. It returns noNamespace, and why, when none
// does.
func (s *Server) chooseNamespaces() (namespaceMode, string) {
	self, err := os.Executable()
	if err != nil {
		return noNamespace, "the server cannot name its own binary: " + err.Error()
	}
	s.self = self
	dir, err := os.MkdirTemp(s.scratch, "host-check-")
	if err != nil {
		return noNamespace, err.Error()
	}
	defer os.RemoveAll(dir)
	const probe = "sshrig-host-check"
	if err := os.WriteFile(filepath.Join(dir, probe), nil, 0o644); err != nil {
		return noNamespace, err.Error()
	}
	check := []string{s.shell, "-c", "[ -e /tmp/" + probe + " ] && [ -d " + shellQuote(s.scratch) + " ]"}
	var whys []string
	if os.Geteuid() == 0 && !s.cfg.commandNamespaces {
		err := s.runOnThread(dir, check)
		if err == nil {
			return threadNamespace, ""
		}
		whys = append(whys, threadNamespace.String()+": "+err.Error())
	}
	if err := s.runInNamespace(userNamespace, dir, check); err != nil {
		whys = append(whys, userNamespace.String()+": "+err.Error())
		return noNamespace, strings.Join(whys, "; ")
	}
	return userNamespace, ""
}

// runOnThread runs argv from a namespace thread whose /tmp is tmp, and
// waits for it.
func (s *Server) runOnThread(tmp string, argv []string) error {
	t, err := startNSThread(tmp, s.keep)
	if err != nil {
		return err
	}
	defer t.close()
	var runErr error
	t.do(func() { runErr = s.runChecked(argv[0], argv, s.env, &syscall.SysProcAttr{}) })
	return runErr
}

// runInNamespace runs argv through the set-up step and waits for it.
func (s *Server) runInNamespace(m namespaceMode, tmp string, argv []string) error {
	attr := &syscall.SysProcAttr{}
	m.apply(attr)
	env := append(append([]string{}, s.env...), hostsetup.Env+"=1")
	return s.runChecked(s.self, hostsetup.Argv(tmp, "/", s.keep, argv), env, attr)
}

// runChecked runs a check and waits for it: its error is what it printed.
func (s *Server) runChecked(path string, argv, env []string, attr *syscall.SysProcAttr) error {
	devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer devNull.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer errR.Close()
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Dir:   "/",
		Env:   env,
		Files: []uintptr{devNull.Fd(), devNull.Fd(), errW.Fd()},
		Sys:   attr,
	})
	errW.Close()
	if err != nil {
		return err
	}
	msg, _ := io.ReadAll(io.LimitReader(errR, 512))
	var ws syscall.WaitStatus
	for {
		_, err = syscall.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case err != nil:
		return err
	case !ws.Exited() || ws.ExitStatus() != 0:
		if len(msg) > 0 {
			return errors.New(strings.TrimSpace(string(msg)))
		}
		return fmt.Errorf("the check exited %d", ws.ExitStatus())
	}
	return nil
}

// nsThread is an OS thread of the server's in a case's private mount
// namespace: what it forks starts there. Its goroutine stays locked to it
// and ends without unlocking, so the thread ends with it and never runs
// another goroutine.
type nsThread struct {
	reqs chan func()
}

// startNSThread starts a thread whose /tmp is tmp, with keep bound back at
// their paths.
func startNSThread(tmp string, keep []string) (*nsThread, error) {
	t := &nsThread{reqs: make(chan func())}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := privateTmp(tmp, keep); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for f := range t.reqs {
			f()
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return t, nil
}

// do runs f on the thread and waits for it.
func (t *nsThread) do(f func()) {
	done := make(chan struct{})
	t.reqs <- func() {
		defer close(done)
		f()
	}
	<-done
}

func (t *nsThread) close() { close(t.reqs) }

// privateTmp moves the calling thread into a new mount namespace whose
// /tmp is tmp, with keep bound back at their paths.
func privateTmp(tmp string, keep []string) error {
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
		return fmt.Errorf("unshare: %w", err)
	}
	return hostsetup.MountTmp(tmp, keep)
}

// keepPaths are the directories under /tmp commands must still find at
// their paths with a private /tmp: the scratch directory (the ledger), the
// gates, and any of PATH's directories there.
func keepPaths(dirs ...string) []string {
	var under []string
	for _, d := range dirs {
		d = filepath.Clean(d)
		if !strings.HasPrefix(d, "/tmp/") {
			continue
		}
		if info, err := os.Stat(d); err != nil || !info.IsDir() {
			continue
		}
		under = append(under, d)
	}
	var out []string
	for _, d := range under {
		inside := false
		for _, o := range under {
			if o != d && strings.HasPrefix(d, o+"/") {
				inside = true
			}
		}
		if !inside && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// HostModel says, once, what each case's host is on this server: whether
// commands get a private /tmp, or why not.
func (s *Server) HostModel() string {
	if s.ns != noNamespace {
		return "every case its own host: home, working directory, SFTP tree and /tmp (" + s.ns.String() + ")"
	}
	return "every case its own home, working directory and SFTP tree; commands share the machine's /tmp (no private mount namespace: " + s.nsWhy + ")"
}
