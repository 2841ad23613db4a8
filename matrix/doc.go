// Package matrix owns the cases sshrig runs: the Case type, the embedded
// default matrix (default.yaml), the matrix file format and its loading and
// validation, selection by glob (--cases), the step cases made from a
// tool's conversation, shards of a selection, and the slow-link faults and
// answer delays a case or run can carry. It runs nothing: package rig runs
// cases, and links no SSH server through this package.
package matrix
