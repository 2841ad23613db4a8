// Package containertest holds the tests of sshrigtest's held server on the
// container target. They are a test binary of their own because the Docker
// client's HTTP connections outlive a test (until their idle timeout), which
// sshrigtest's own leak check, rightly strict for the embedded target, would
// count; here those two goroutines, and nothing else, are allowed.
package containertest
