package plainssh

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// Server is a running plain SSH server on loopback with one authorised key.
type Server struct {
	// Addr is the server's "127.0.0.1:port".
	Addr string
	// Identity is an OpenSSH private key file the server accepts, and
	// KnownHosts a known_hosts file that pins the server's host key for
	// Addr; both in the directory given to Start.
	Identity   string
	KnownHosts string
	// Signer is Identity's key, for an in-process client.
	Signer gossh.Signer
	// HostKey is the server's host key.
	HostKey gossh.PublicKey

	srv    *ssh.Server
	mu     sync.Mutex
	closed bool
	cmds   sync.WaitGroup // handlers and their stdin copies
	once   sync.Once
	err    error
}

// Start starts a server whose commands run in dir, where it also writes its
// key files.
func Start(dir string) (*Server, error) {
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	hostSigner, err := gossh.NewSignerFromKey(hostPriv)
	if err != nil {
		return nil, err
	}
	_, userPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	userSigner, err := gossh.NewSignerFromKey(userPriv)
	if err != nil {
		return nil, err
	}
	block, err := gossh.MarshalPrivateKey(userPriv, "")
	if err != nil {
		return nil, err
	}
	s := &Server{Identity: filepath.Join(dir, "plainssh_id_ed25519"), KnownHosts: filepath.Join(dir, "plainssh_known_hosts"),
		Signer: userSigner, HostKey: hostSigner.PublicKey()}
	if err := os.WriteFile(s.Identity, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.Addr = ln.Addr().String()
	line := fmt.Sprintf("[127.0.0.1]:%d %s", ln.Addr().(*net.TCPAddr).Port, gossh.MarshalAuthorizedKey(s.HostKey))
	if err := os.WriteFile(s.KnownHosts, []byte(line), 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	s.srv = &ssh.Server{
		Handler: func(sess ssh.Session) {
			if !s.track() {
				return
			}
			defer s.cmds.Done()
			sess.Exit(s.run(sess, dir))
		},
		PublicKeyHandler: func(_ ssh.Context, key ssh.PublicKey) bool {
			return bytes.Equal(key.Marshal(), userSigner.PublicKey().Marshal())
		},
	}
	s.srv.AddHostKey(hostSigner)
	go s.srv.Serve(ln)
	return s, nil
}

// run runs the session's command and returns its exit status; the command's
// process group is killed when the session's connection ends. Its stdin is copied from
// the session until the client sends EOF or the session ends, which it does
// once the command's status is sent: the command need not wait for that.
func (s *Server) run(sess ssh.Session, dir string) int {
	cmd := exec.CommandContext(sess.Context(), "/bin/sh", "-c", sess.RawCommand())
	cmd.Dir = dir
	// The command leads a process group of its own, and the whole group is
	// killed when the session's connection ends, as sshd's session is:
	// killing the shell alone would leave a child holding the output open,
	// and Wait waiting for it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Stdout, cmd.Stderr = sess, sess.Stderr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 255
	}
	if err := cmd.Start(); err != nil {
		return 127
	}
	s.cmds.Go(func() {
		io.Copy(stdin, sess)
		stdin.Close()
	})
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode()
	}
	return 255
}

// track counts a handler in, unless the server is closing.
func (s *Server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.cmds.Add(1)
	return true
}

// Close stops the server, closes its connections and waits for their
// commands to end.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.err = s.srv.Close()
		s.cmds.Wait()
	})
	return s.err
}
