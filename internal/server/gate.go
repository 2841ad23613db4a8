package server

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sshrig/sshrig/markers"
)

// gate is the server's end of one command's gate FIFOs (see
// markers.GateEnv). The server holds both open for reading and writing, so a
// wrapped script's opens never block and the gate FIFO never reports end of
// file while the command lives; however deep in the command's process tree
// the script runs, its gate lines arrive here, and it goes on only when told.
type gate struct {
	path      string
	in, ack   *os.File
	lines     chan gateLine // closed when in is closed
	readerEnd chan struct{}
}

// gateLine is one line a wrapped script wrote at a gate.
type gateLine struct {
	kind string // markers.GateStart, markers.GateDone, or gateSync
	id   string // the marker id
	pid  int    // the shell that runs the script, as in its markers
}

func parseGateLine(s string) (gateLine, error) {
	if s == syncLine {
		return gateLine{kind: gateSync}, nil
	}
	f := strings.Split(s, " ")
	if len(f) != 3 || (f[0] != markers.GateStart && f[0] != markers.GateDone) {
		return gateLine{}, fmt.Errorf("gate line %q: want %q or %q, an id and a pid", s, markers.GateStart, markers.GateDone)
	}
	if err := markers.ValidID(f[1]); err != nil {
		return gateLine{}, fmt.Errorf("gate line %q: %v", s, err)
	}
	pid, err := strconv.Atoi(f[2])
	if err != nil || pid < 1 {
		return gateLine{}, fmt.Errorf("gate line %q: bad pid", s)
	}
	return gateLine{kind: f[0], id: f[1], pid: pid}, nil
}

// newGate makes the FIFOs for command n in dir and starts reading them.
func newGate(dir string, n uint64) (*gate, error) {
	g := &gate{path: filepath.Join(dir, "gate-"+strconv.FormatUint(n, 10)), lines: make(chan gateLine, 4), readerEnd: make(chan struct{})}
	ackPath := g.path + markers.GateAckSuffix
	for _, p := range []string{g.path, ackPath} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			g.remove()
			return nil, fmt.Errorf("gate: %w", err)
		}
	}
	var err error
	if g.in, err = os.OpenFile(g.path, os.O_RDWR, 0); err != nil {
		g.remove()
		return nil, fmt.Errorf("gate: %w", err)
	}
	if g.ack, err = os.OpenFile(ackPath, os.O_RDWR, 0); err != nil {
		g.in.Close()
		g.remove()
		return nil, fmt.Errorf("gate: %w", err)
	}
	return g, nil
}

// read delivers gate lines until close; bad lines are reported through bad.
func (g *gate) read(bad func(error)) {
	defer close(g.readerEnd)
	defer close(g.lines)
	sc := bufio.NewScanner(g.in)
	for sc.Scan() {
		l, err := parseGateLine(sc.Text())
		if err != nil {
			bad(err)
			continue
		}
		g.lines <- l
	}
}

// gateSync is the kind of the line the server writes into the gate itself
// (sync): a pipe keeps order, so it arrives after every line written
// before it.
const (
	gateSync = "sync"
	syncLine = gateSync + " by the server"
)

// sync writes the server's own line into the gate; its arrival on lines
// says every line written before it has arrived.
func (g *gate) sync() error {
	_, err := g.in.WriteString(syncLine + "\n")
	return err
}

// proceed lets one waiting script go on.
func (g *gate) proceed() { g.ack.WriteString("go\n") }

// close ends the reader (which must have been started) and removes the
// FIFOs. A script still waiting at the gate then reads end of file and goes
// on, so the command must be gone first.
func (g *gate) close() {
	g.in.Close()
	for range g.lines {
	}
	<-g.readerEnd
	g.ack.Close()
	g.remove()
}

func (g *gate) remove() {
	os.Remove(g.path)
	os.Remove(g.path + markers.GateAckSuffix)
}
