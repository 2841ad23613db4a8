// Package operations owns the operations whose answers have a contract: what
// the remote command prints when it succeeds, which a tool must check before
// it acts on a value from it (seed 003: a parser that succeeded does not
// prove the answer meets the tool's contract). It also owns the fixtures
// that break such a contract one assumption at a time.
package operations
