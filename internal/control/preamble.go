package control

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/sshrig/sshrig/markers"
)

// The preamble is the first line the cutter writes on every upstream
// connection, before any byte of the tool's: it attributes the connection to
// its case without the tool's cooperation. The server strips it before the SSH
// exchange starts.
//
//	SSHRIG/1 <case> <conn> [<from>]\n
//
// <case> is a case id (see ValidID), <conn> the cutter's connection number (>= 1),
// <from> the address the connection came to the cutter from (ip:port), when
// the cutter names it: the server knows by it which of its own jump-host
// tunnels a target connection belongs to.
const preambleMagic = "SSHRIG/1"

// maxPreamble bounds the preamble line so a stray client cannot make the
// server buffer without limit.
const maxPreamble = 256

// Preamble identifies the case and connection an upstream connection belongs to.
type Preamble struct {
	Case string
	Conn int
	// From is the address the cutter's client connected from, or "".
	From string
}

// ErrBadPreamble is returned when a connection does not start with a valid preamble.
var ErrBadPreamble = errors.New("control: bad preamble")

// String renders the preamble line, newline included.
func (p Preamble) String() string {
	if p.From != "" {
		return fmt.Sprintf("%s %s %d %s\n", preambleMagic, p.Case, p.Conn, p.From)
	}
	return fmt.Sprintf("%s %s %d\n", preambleMagic, p.Case, p.Conn)
}

// WritePreamble writes p to w.
func WritePreamble(w io.Writer, p Preamble) error {
	if err := ValidID(p.Case); err != nil {
		return err
	}
	if p.Conn < 1 {
		return fmt.Errorf("control: preamble conn %d < 1", p.Conn)
	}
	if p.From != "" {
		if _, err := netip.ParseAddrPort(p.From); err != nil {
			return fmt.Errorf("control: preamble from: %w", err)
		}
	}
	_, err := io.WriteString(w, p.String())
	return err
}

// ReadPreamble reads one preamble line from r. It reads at most maxPreamble
// bytes; bytes after the newline stay in r for the SSH exchange.
func ReadPreamble(r *bufio.Reader) (Preamble, error) {
	var line []byte
	for {
		b, err := r.ReadByte()
		if err != nil {
			return Preamble{}, fmt.Errorf("%w: %v", ErrBadPreamble, err)
		}
		if b == '\n' {
			break
		}
		line = append(line, b)
		if len(line) > maxPreamble {
			return Preamble{}, fmt.Errorf("%w: longer than %d bytes", ErrBadPreamble, maxPreamble)
		}
	}
	fields := strings.Split(string(line), " ")
	if len(fields) < 3 || len(fields) > 4 || fields[0] != preambleMagic {
		return Preamble{}, fmt.Errorf("%w: %q", ErrBadPreamble, line)
	}
	if err := ValidID(fields[1]); err != nil {
		return Preamble{}, fmt.Errorf("%w: %v", ErrBadPreamble, err)
	}
	n, err := strconv.Atoi(fields[2])
	if err != nil || n < 1 {
		return Preamble{}, fmt.Errorf("%w: conn %q", ErrBadPreamble, fields[2])
	}
	p := Preamble{Case: fields[1], Conn: n}
	if len(fields) == 4 {
		ap, err := netip.ParseAddrPort(fields[3])
		if err != nil {
			return Preamble{}, fmt.Errorf("%w: from %q", ErrBadPreamble, fields[3])
		}
		p.From = ap.String()
	}
	return p, nil
}

// ValidID reports whether s can name a case: case ids are marker ids (see
// markers.ValidID), so they never need quoting in a preamble or a marker line.
func ValidID(s string) error { return markers.ValidID(s) }
