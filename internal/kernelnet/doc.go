// Package kernelnet owns the rig's kernel network (--net kernel): two
// network namespaces the rig creates, the tool's side and the server's side,
// joined by one veth pair, and the faults it installs for one connection at
// a time in the server side's kernel with nftables.
//
//	 tool's namespace                          server's namespace
//	+---------------------------+   veth    +-------------------------------+
//	| tool (external process,   |           | cutter's listener 169.254.83.2|
//	| or in-process dials from  |-----------| nftables table per cut:       |
//	| a thread locked in it)    |           |   drop / reject / drop-RST    |
//	| sshrig-t 169.254.83.1/30  |           | sshrig-s                      |
//	+---------------------------+           +-------------------------------+
//	                                                    | the cutter relays to the
//	                                                    v server on the rig's side
//
// The namespaces have no name and no bind mount: the rig holds them open by
// file descriptor, and the kernel frees them, with the veth pair and every
// nftables table inside, when the last descriptor closes and the last
// process in them exits. A crashed rig therefore leaves no namespace, veth
// or table behind; only a process it started in the tool's namespace could
// keep that namespace alive, and `sshrig gc` kills such leftovers as any
// other. Addresses are link-local (169.254.0.0/16) and live only inside the
// two namespaces: the host's own interfaces, addresses and routes are never
// touched, and no packet leaves the pair.
//
// A fault is installed at the cutter's barrier, after the bytes that define
// the moment were handed to the tool's socket and the cutter's send queue
// emptied, so the moment is the same as under the proxy; only what the
// tool's kernel then meets differs:
//
//   - blackhole: every packet of the connection is dropped both ways. The
//     tool's kernel retransmits unacknowledged data until its timers give up
//     (tcp_retries2, TCP_USER_TIMEOUT) and its keepalive probes go
//     unanswered, as on a dead route.
//   - reset: the cutter's socket aborts (the kernel sends an RST) and every
//     later segment of the tool's is answered with an RST by the ruleset.
//   - vanish: the cutter's socket aborts while the ruleset drops that RST,
//     and the rule goes again at once: no packet tells the tool, and its
//     next segment meets the kernel's RST for a connection it does not know,
//     as after the server's host rebooted.
//
// Creating namespaces and veth pairs needs CAP_NET_ADMIN in the rig's user
// namespace: root, or the rig started under `unshare --user --map-root-user
// --net` (an unprivileged user namespace). [Check] says which is missing.
package kernelnet
