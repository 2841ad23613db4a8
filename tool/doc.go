// Package tool defines what a tool under test is to the rig: something that,
// given a Target (where to connect, with which credentials, which operation
// and command, under which correlation id and deadline), tries the operation
// once and prints one result object (package result) on its stdout.
//
// The rig's built-in tools (the reference client and the faulty "mutants")
// implement Tool in-process; external programs in any language get the same
// Target through SSHRIG_* environment variables (see Target.Environ and
// docs/tool-contract.md); Go tools can implement Tool and be tested inside
// `go test` with the harness in package sshrigtest (a Go function becomes a
// Tool with sshrigtest.Func).
package tool
