// Package fault owns the rig's fault vocabulary: the moments of an SSH exchange
// where a cut can land, the kinds of cut, and what the remote command does when
// its transport dies (dispositions).
//
// Each concept is defined exactly once, here, with a String method and a parser
// whose error names the bad value and lists the valid ones. Documentation tables
// and matrix files are checked against these definitions.
package fault
