// Package control owns the wire between the rig and its SSH server: the
// preamble that attributes every proxied connection to its case, and the
// authenticated control protocol that carries events out of the server
// (moments, connections, processes) and case set-up, barrier releases and
// case teardown into it. It works the same across a process boundary and a
// container boundary: it is plain TCP with newline-delimited JSON.
package control
