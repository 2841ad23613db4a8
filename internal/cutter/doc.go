// Package cutter owns the cutter: one local TCP proxy per test case that sits
// between the tool under test and the rig's SSH server, forwards bytes both
// ways, and on request kills one connection's transport at an exact byte of
// the SSH exchange.
//
// # Stream chain
//
// Each accepted client connection gets a number (1, 2, 3... per cutter), an
// upstream connection, and two pumps, one per direction:
//
//	          client socket                          upstream socket
//	  tool ------------------> [ pump c->s ] ------------------> SSH server
//	  tool <------------------ [ pump s->c ] <------------------ SSH server
//	                                |
//	                                +-- counts bytes written to the client,
//	                                    wakes Cut after every write, and holds
//	                                    bytes back at a pending cut's flush
//
//	upstream socket, first line:  SSHRIG/1 <case> <conn> <from>\n   (control.WritePreamble)
//
// The preamble is written before any byte of the tool's, so the server can
// attribute the connection to its case and connection number without the
// tool's cooperation. A pump reads a chunk from its source and writes it to its
// destination; nothing is buffered beyond the chunk in flight.
//
// Without a cut a connection behaves like a plain TCP connection: EOF from one
// side becomes CloseWrite (FIN) on the other, both sockets close once both
// directions ended, and any other read or write error closes both sockets.
//
// # The flush rule
//
// The server announces a moment ("exit status sent") together with the number
// of bytes it had written on the connection at that point, and the rig asks
// for the cut with flush set to that number. [Cutter.Cut] first waits, on a
// signal from the s->c pump and never by polling, until at least flush
// server->client bytes have been written to the client socket; only then does
// it stop both pumps. Without this rule the cut races the bytes that define
// the moment: on a prototype the client missed the exit status about three
// times in four. While a cut waits, the s->c pump writes no byte past flush,
// so a cut requested before the bytes arrived lands exactly at flush rather
// than wherever the pump happened to be (Report.Delivered says where it
// landed). If the connection ends before flush bytes were delivered, Cut
// fails instead of waiting forever.
//
// Stopping is the same for every kind: the connection is marked as cutting,
// read and write deadlines in the past knock both pumps out of any blocked
// call without closing anything, and Cut waits until both pumps returned.
// Bytes a pump had read but not written at that instant are dropped. Only
// then is the kind's socket action taken, so no pump byte can follow it.
//
// # Cut kinds
//
//   - [fault.Reset]: SetLinger(0) and Close on both sockets, which makes the
//     kernel send an RST each way. The tool's next read fails with
//     ECONNRESET after it read the bytes already delivered (Linux keeps
//     received data readable after an RST). Bytes still in the cutter's send
//     queue are discarded by the RST; Report.Unsent says how many there were.
//   - [fault.Close]: CloseWrite (FIN) on both sockets, never an RST. The
//     sockets are then read and drained until each peer's own FIN (or the
//     cutter's Close), and only then closed: closing a socket with unread
//     received bytes would make the kernel send an RST instead.
//   - [fault.Blackhole]: the pumps stop and nothing else happens. Both sockets
//     stay open, so both peers' writes keep succeeding into kernel buffers
//     and their reads block, until the cutter's Close.
//   - [fault.KillHelper] is not a socket cut; another part of the rig handles
//     it and Cut refuses it.
//
// A cut affects only its connection: the cutter keeps accepting and
// forwarding new connections, so a tool that retries reaches the server
// again, which is what the rig wants to observe.
//
// # Slow-link faults
//
// [WithLink] shapes every connection like a slow link, the faults toxiproxy
// users rely on: [Latency] with jitter, a [Bandwidth] limit, and a [Slicer]
// that splits data into small writes (link.go draws the chain). They delay
// and split writes and never change a byte, every wait ends the moment the
// connection is cut or closed, and the flush rule counts bytes, so a cut
// lands at its byte whatever the link does. Small writes can sit a moment in
// the kernel's send queue (TCP small queues): before a reset, a shaped
// connection waits for that queue to empty, or the RST would discard bytes
// the flush counted as delivered. Every random value is drawn from
// Link.Seed, per connection and direction.
//
// # Refusing
//
// [Refusing] provides the address for the refuse moment: a TCP socket bound
// to 127.0.0.1 that never listens. Connecting to it gets ECONNREFUSED every
// time, and holding the bound socket keeps any other process from taking the
// port.
package cutter
