// Command reportcmp compares two sshrig run reports case by case, on what a
// change to the rig's structure must leave alone: each case's verdict, grade,
// truth and the rules of its violations. Timings, correlation ids and messages
// differ from run to run and are ignored.
//
//	go run ./internal/reportcmp BEFORE/report.json AFTER/report.json
//
// It prints one line per difference and a summary ("81 cases compared,
// differences: 0") and exits 1 when anything differs, 2 on bad input.
package main
