// Package gotool shows how a Go program that runs commands over SSH tests
// itself with sshrig inside `go test`: a small honest tool (Honest) that
// passes the whole default matrix, and the same tool with one realistic
// defect (IgnoresExitCode) whose failures the tests pin down.
//
// It is a module of its own and imports only sshrig's public packages, as a
// user's module would.
package gotool
