//go:build !linux

package cutter

import "net"

// unsent is only implemented on Linux (SIOCOUTQNSD); -1 means unknown.
func unsent(*net.TCPConn) int64 { return -1 }
