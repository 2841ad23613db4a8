//go:build !linux

package cutter

import (
	"net"
	"time"
)

// unsent is only implemented on Linux (SIOCOUTQNSD); -1 means unknown.
func unsent(*net.TCPConn) int64 { return -1 }

// awaitSent is only implemented on Linux; -1 means unknown.
func awaitSent(*net.TCPConn, time.Duration) int64 { return -1 }
