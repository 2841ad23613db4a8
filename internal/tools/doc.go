// Package tools owns the rig's built-in tools under test: the reference
// client, which classifies honestly, and the mutants, each the reference
// client with one realistic defect, which prove the rig catches that defect
// with the right assertion.
package tools
