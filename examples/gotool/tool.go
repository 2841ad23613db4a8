package gotool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/sshrig/sshrig/result"
	"github.com/sshrig/sshrig/tool"
)

// Honest runs t.Command once and says what it can know: an exit status that
// arrived is the answer; a connection lost after the request left means the
// outcome is unknown; a failure before it left means nothing ran.
func Honest(ctx context.Context, t tool.Target) result.Result { return run(ctx, t, false) }

// IgnoresExitCode is Honest with one defect seen in real tools: it treats
// any exit status that arrived as success, so a command that failed is
// reported as done.
func IgnoresExitCode(ctx context.Context, t tool.Target) result.Result { return run(ctx, t, true) }

// attempt is what one try established.
type attempt struct {
	sent    bool // the exec request may have reached the server
	exited  bool // an exit status arrived
	code    int
	signal  string
	stdout  []byte
	refusal result.Category // the server refused, and said so
	// hostKey: the server's host key is not the one in known_hosts; the
	// handshake stopped before anything was sent.
	hostKey bool
	err     error
}

func run(ctx context.Context, t tool.Target, ignoreExitCode bool) result.Result {
	ctx, cancel := context.WithTimeout(ctx, t.Deadline)
	defer cancel()
	a := try(ctx, t)
	r := result.Result{Operation: t.Operation, CorrelationID: t.CorrelationID}
	switch {
	case a.exited && (a.code == 0 && a.signal == "" || ignoreExitCode):
		if err := checkContract(t.Operation, a.stdout); err != nil {
			r.Category, r.Retry, r.Message = result.MalformedResponse, result.Never, err.Error()
			break
		}
		r.OK, r.Category, r.Retry, r.Message = true, result.Succeeded, result.Never, "the command exited 0"
	case a.exited:
		r.Category, r.Retry, r.Message = result.ConfirmedFailure, result.Never, fmt.Sprintf("the command exited %d %s", a.code, a.signal)
	case a.hostKey:
		r.Category, r.Retry, r.Message = result.LocalFailure, result.Never, fmt.Sprintf("the server's host key does not match known_hosts (%v): nothing was sent; no retry to that host until a person has looked", a.err)
	case a.refusal != "":
		r.Category, r.Retry, r.Message = a.refusal, result.Never, fmt.Sprintf("refused: %v", a.err)
		if a.refusal == result.RateLimited {
			r.Retry = result.AfterDelay
		}
	case a.sent:
		r.Category, r.Retry, r.Message = result.OutcomeUnknown, result.ReconcileFirst, fmt.Sprintf("no exit status after the request was sent (%v): reconcile first", a.err)
	default:
		r.Category, r.Retry, r.Message = result.LocalFailure, result.Bounded, fmt.Sprintf("failed before the request was sent (%v): nothing ran", a.err)
	}
	return r
}

func try(ctx context.Context, t tool.Target) (a attempt) {
	key, err := os.ReadFile(t.Identity)
	if err != nil {
		a.err = err
		return a
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		a.err = errors.New("the identity is not a usable key")
		return a
	}
	if t.Certificate != "" {
		if signer, err = certSigner(t.Certificate, signer); err != nil {
			a.err = err
			return a
		}
	}
	hostKeys, err := knownhosts.New(t.KnownHosts)
	if err != nil {
		a.err = err
		return a
	}
	// t.Dial, not net.Dial: under --net kernel the server is reachable only
	// from the rig's tool namespace.
	conn, err := t.Dial(ctx, &net.Dialer{})
	if err != nil {
		a.err = err
		return a
	}
	defer conn.Close()
	// A cancelled or expired attempt ends whatever read is blocked.
	defer context.AfterFunc(ctx, func() { conn.Close() })()

	authTried := make(chan struct{}, 1)
	cfg := &ssh.ClientConfig{User: t.User, HostKeyCallback: hostKeys,
		Auth: []ssh.AuthMethod{ssh.PublicKeysCallback(func() ([]ssh.Signer, error) {
			select {
			case authTried <- struct{}{}:
			default:
			}
			return []ssh.Signer{signer}, nil
		})}}
	// ClientConfig.Timeout bounds only the TCP connect: the handshake needs
	// a deadline of its own.
	conn.SetDeadline(time.Now().Add(t.Deadline / 2))
	sc, chans, reqs, err := ssh.NewClientConn(conn, t.Addr, cfg)
	if err != nil {
		a.err = err
		var keyErr *knownhosts.KeyError
		a.hostKey = errors.As(err, &keyErr)
		if len(authTried) > 0 && !a.hostKey && !transport(err) {
			a.refusal = result.AuthenticationFailed
		}
		return a
	}
	conn.SetDeadline(time.Time{})
	client := ssh.NewClient(sc, chans, reqs)
	defer client.Close()
	stop := keepalive(ctx, client, t.Deadline/7)
	defer stop()

	sess, err := client.NewSession()
	if err != nil {
		a.err = err
		var oce *ssh.OpenChannelError
		if errors.As(err, &oce) && oce.Reason == ssh.ResourceShortage {
			a.refusal = result.RateLimited
		}
		return a
	}
	defer sess.Close()
	var stdout bytes.Buffer
	sess.Stdout, sess.Stderr = &stdout, io.Discard
	a.sent = true
	if err := sess.Start(t.Command); err != nil {
		a.err = err
		if !transport(err) {
			a.refusal = result.AuthorizationDenied // the server answered: it will not run this
		}
		return a
	}
	err = sess.Wait()
	a.stdout = stdout.Bytes()
	var exit *ssh.ExitError
	switch {
	case err == nil:
		a.exited = true
	case errors.As(err, &exit):
		a.exited, a.code, a.signal = true, exit.ExitStatus(), exit.Signal()
	default:
		a.err = err // *ssh.ExitMissingError: the connection went first
	}
	return a
}

// keepalive closes the client when the server stops answering: a blackholed
// connection otherwise hangs Wait forever.
func keepalive(ctx context.Context, client *ssh.Client, every time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				client.Close()
				return
			case <-tick.C:
			}
			answered := make(chan struct{})
			go func() { client.SendRequest("keepalive@openssh.com", true, nil); close(answered) }()
			select {
			case <-answered:
				continue
			case <-time.After(every * 2):
			case <-ctx.Done():
			case <-done:
			}
			client.Close()
			<-answered
			return
		}
	}()
	return func() { close(done); <-finished }
}

func transport(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.As(err, &ne)
}

func certSigner(path string, s ssh.Signer) (ssh.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		return nil, err
	}
	cert, ok := pub.(*ssh.Certificate)
	if !ok {
		return nil, errors.New("the certificate file holds a plain key")
	}
	return ssh.NewCertSigner(cert, s)
}

// checkContract checks create_record's answer: exactly one JSON object
// {"records": [{"id": "<non-empty string>", "status": "created"}]}.
func checkContract(operation string, stdout []byte) error {
	if operation != "create_record" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(stdout))
	var answer struct {
		Records []struct {
			ID     *string `json:"id"`
			Status string  `json:"status"`
		} `json:"records"`
	}
	if err := dec.Decode(&answer); err != nil {
		return fmt.Errorf("the answer is not the record: %v", err)
	}
	if dec.More() {
		return errors.New("the answer has more than one JSON value")
	}
	if len(answer.Records) != 1 {
		return fmt.Errorf("the answer lists %d records, want exactly 1", len(answer.Records))
	}
	if rec := answer.Records[0]; rec.ID == nil || *rec.ID == "" || rec.Status != "created" {
		return errors.New("the record has no string id or is not created")
	}
	return nil
}
