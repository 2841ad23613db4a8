// Package sockowner finds the local processes that hold a TCP socket, by its
// two ends, through Linux's /proc (the socket's inode in /proc/net/tcp{,6},
// then every /proc/PID/fd link to "socket:[inode]"), and kills them
// race-free through pidfds. The rig uses it for the kill-helper cut: SIGKILL
// to the process that owns the tool's client socket, e.g. the ssh child of a
// wrapper script.
package sockowner
