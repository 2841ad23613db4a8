package kernelnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/sshrig/sshrig/fault"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// TablePrefix starts the name of every nftables table the rig makes; each
// cut gets its own table, so removing a cut is removing its table.
const TablePrefix = "sshrig_"

// faults installs and removes nftables tables in the server's namespace
// over one netlink connection; nftables batches are per connection, so
// installs are serialised.
type faults struct {
	mu   sync.Mutex
	conn *nftables.Conn
	next int
	live map[string]*nftables.Table
}

func newFaults(server netns.NsHandle) (*faults, error) {
	conn, err := nftables.New(nftables.WithNetNSFd(int(server)), nftables.AsLasting())
	if err != nil {
		return nil, fmt.Errorf("kernelnet: nftables: %w", err)
	}
	return &faults{conn: conn, live: map[string]*nftables.Table{}}, nil
}

// verdicts of one table: what happens to the connection's packets coming in
// from the tool and going out to it; nil leaves that direction alone.
type verdicts struct{ in, out expr.Any }

var (
	drop        = &expr.Verdict{Kind: expr.VerdictDrop}
	rejectReset = &expr.Reject{Type: unix.NFT_REJECT_TCP_RST}
)

// install adds one table whose chains give the connection between client
// (the tool's end) and listener (the server side's end) the verdicts v,
// and returns the table's name.
func (f *faults) install(client, listener netip.AddrPort, v verdicts) (string, error) {
	if !client.Addr().Is4() || !listener.Addr().Is4() {
		return "", fmt.Errorf("kernelnet: %s -> %s: only IPv4 ends are matched", client, listener)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.live == nil {
		return "", errors.New("kernelnet: closed")
	}
	f.next++
	t := f.conn.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: fmt.Sprintf("%s%d", TablePrefix, f.next)})
	for _, c := range []struct {
		name     string
		hook     *nftables.ChainHook
		verdict  expr.Any
		src, dst netip.AddrPort
	}{
		{"in", nftables.ChainHookInput, v.in, client, listener},
		{"out", nftables.ChainHookOutput, v.out, listener, client},
	} {
		if c.verdict == nil {
			continue
		}
		ch := f.conn.AddChain(&nftables.Chain{Name: c.name, Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: c.hook, Priority: nftables.ChainPriorityFilter})
		f.conn.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: append(match(c.src, c.dst), c.verdict)})
	}
	if err := f.conn.Flush(); err != nil {
		return "", fmt.Errorf("kernelnet: install %s: %w", t.Name, err)
	}
	f.live[t.Name] = t
	return t.Name, nil
}

// remove deletes a table install made.
func (f *faults) remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.live[name]
	if !ok {
		return nil // gone with Close already
	}
	delete(f.live, name)
	f.conn.DelTable(t)
	if err := f.conn.Flush(); err != nil {
		return fmt.Errorf("kernelnet: remove %s: %w", name, err)
	}
	return nil
}

// tables lists the rig's tables the server's kernel holds now.
func (f *faults) tables() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ts, err := f.conn.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range ts {
		names = append(names, t.Name)
	}
	return names, nil
}

func (f *faults) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live = nil // the tables go with the namespace
	return f.conn.CloseLasting()
}

// match is the rule body that selects the TCP segments from src to dst.
func match(src, dst netip.AddrPort) []expr.Any {
	port := func(p uint16) []byte { return binary.BigEndian.AppendUint16(nil, p) }
	load := func(base expr.PayloadBase, off, n uint32, want []byte) []expr.Any {
		return []expr.Any{
			&expr.Payload{DestRegister: 1, Base: base, Offset: off, Len: n},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: want},
		}
	}
	out := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
	}
	out = append(out, load(expr.PayloadBaseNetworkHeader, 12, 4, src.Addr().AsSlice())...)
	out = append(out, load(expr.PayloadBaseNetworkHeader, 16, 4, dst.Addr().AsSlice())...)
	out = append(out, load(expr.PayloadBaseTransportHeader, 0, 2, port(src.Port()))...)
	out = append(out, load(expr.PayloadBaseTransportHeader, 2, 2, port(dst.Port()))...)
	return out
}

// Cut makes kind's fault in the kernel for the connection between client
// (the tool's end) and listener (the server side's socket, whose owner
// passes abort: it closes that socket with an RST, linger 0). See the
// package documentation for each kind. The returned remove undoes what
// stays installed once the case is over; it is nil when nothing stays.
func (n *Net) Cut(kind fault.Cut, client, listener netip.AddrPort, abort func() error) (remove func() error, err error) {
	var v verdicts
	switch kind {
	case fault.Blackhole:
		v = verdicts{in: drop, out: drop}
	case fault.Reset:
		v = verdicts{in: rejectReset}
	case fault.Vanish:
		v = verdicts{out: drop}
	default:
		return nil, fmt.Errorf("kernelnet: %v is not a kernel cut (kernel cuts: %v)", kind, fault.KernelCuts())
	}
	name, err := n.faults.install(client, listener, v)
	if err != nil {
		return nil, err
	}
	remove = func() error { return n.faults.remove(name) }
	if kind == fault.Blackhole {
		return remove, nil
	}
	// close(2) with linger 0 sends the RST before it returns, through the
	// output hook: for vanish the table drops it, and can go right after.
	aerr := abort()
	if kind == fault.Vanish {
		return nil, errors.Join(aerr, remove())
	}
	return remove, aerr
}

// Tables lists the rig's nftables tables the server's namespace holds now
// (tests use it to see that every cut's table went again).
func (n *Net) Tables() ([]string, error) { return n.faults.tables() }
