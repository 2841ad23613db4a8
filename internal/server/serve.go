package server

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	gossh "golang.org/x/crypto/ssh"
)

// ServeOptions configure Serve, the body of `sshrig serve`.
type ServeOptions struct {
	SSHListen     string // default 127.0.0.1:0
	ControlListen string // default 127.0.0.1:0
	Scratch       string
	Shell         string
	// TokenHex is the control token, hex-encoded (at least 16 bytes).
	TokenHex string
	// HostKeyPEM, when set, is the SSH host key (a private key in PEM, as
	// target.HostKeyEnv carries it): a server restarted with it presents
	// the key the rig's known_hosts pin. Default: a fresh key.
	HostKeyPEM string
	// Lifeline, when not nil, is read until EOF; then the server stops. A
	// parent that dies closes it, so the server cannot outlive the rig.
	Lifeline io.Reader
}

// ReadyLine is what Serve prints once it listens: one JSON object and a newline.
type ReadyLine struct {
	SSH     string `json:"ssh"`
	Control string `json:"control"`
	PID     int    `json:"pid"`
	HostKey string `json:"host_key"`
	Ledger  string `json:"ledger"`
	// Hosts is what each case's host is on this server (Server.HostModel):
	// whether commands get a private /tmp, or why not.
	Hosts string `json:"hosts"`
}

// ErrBadToken reports a missing or short control token.
var ErrBadToken = errors.New("server: control token must be hex, at least 16 bytes")

// Serve runs a server until ctx is done or the lifeline ends, printing the
// ready line to out once both listeners are up.
func Serve(ctx context.Context, o ServeOptions, out io.Writer) error {
	token, err := hex.DecodeString(o.TokenHex)
	if err != nil || len(token) < 16 {
		return ErrBadToken
	}
	if o.SSHListen == "" {
		o.SSHListen = "127.0.0.1:0"
	}
	if o.ControlListen == "" {
		o.ControlListen = "127.0.0.1:0"
	}
	var hostKey gossh.Signer
	if o.HostKeyPEM != "" {
		if hostKey, err = gossh.ParsePrivateKey([]byte(o.HostKeyPEM)); err != nil {
			return fmt.Errorf("server: host key: %w", err)
		}
	}
	sshLn, err := net.Listen("tcp", o.SSHListen)
	if err != nil {
		return fmt.Errorf("server: ssh listener: %w", err)
	}
	ctlLn, err := net.Listen("tcp", o.ControlListen)
	if err != nil {
		sshLn.Close()
		return fmt.Errorf("server: control listener: %w", err)
	}
	srv, err := New(Config{SSH: sshLn, Control: ctlLn, Token: token, Scratch: o.Scratch, Shell: o.Shell, HostKey: hostKey})
	if err != nil {
		sshLn.Close()
		ctlLn.Close()
		return err
	}
	srv.Start()
	line, _ := json.Marshal(ReadyLine{
		SSH:     sshLn.Addr().String(),
		Control: ctlLn.Addr().String(),
		PID:     os.Getpid(),
		HostKey: string(trimNL([]byte(srv.ctl.ReadyInfo().HostKey))),
		Ledger:  srv.Ledger(),
		Hosts:   srv.HostModel(),
	})
	fmt.Fprintf(out, "%s\n", line)

	lifelineDone := make(chan struct{})
	if o.Lifeline != nil {
		go func() {
			io.Copy(io.Discard, o.Lifeline)
			close(lifelineDone)
		}()
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case <-lifelineDone:
	case serveErr = <-srv.serveErr:
	}
	return errors.Join(serveErr, srv.Close())
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
