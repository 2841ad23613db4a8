// Package testpeer is how a test needs a program the machine may lack (a
// real SSH client, a shell, a browser, a linter): it finds the program on
// PATH, or skips the test naming the Debian package that installs it. With
// SSHRIG_REQUIRE_PEERS=1 (as .ci/run sets) a missing program fails the test
// instead, so CI cannot pass by skipping. It owns the table of the programs
// the tests run and their Debian packages.
package testpeer
