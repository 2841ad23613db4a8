package fault_test

import (
	"fmt"

	"github.com/sshrig/sshrig/fault"
)

// Moments, in exchange order, with what a caller can know when the cut lands
// there.
func ExampleMoments() {
	for _, m := range fault.Moments() {
		fmt.Printf("%-12s cut=%-5t %s\n", m, m.HasCut(), m.Knowledge())
	}
	// Output:
	// refuse       cut=false nothing was sent
	// accept       cut=true  nothing was sent
	// handshake    cut=true  nothing was sent
	// auth         cut=true  nothing was sent
	// channel      cut=true  nothing was sent
	// prep-step    cut=true  nothing was sent
	// exec         cut=true  request sent, no result
	// started      cut=true  request sent, no result
	// output       cut=true  request sent, no result
	// finished     cut=true  request sent, no result
	// exit-status  cut=true  result received
	// cleanup-step cut=true  result received
	// none         cut=false result received
}

// A parser's error names the bad value and every valid one.
func ExampleParseCut() {
	c, err := fault.ParseCut("stall")
	fmt.Println(c, c.DropsTransport(), err)
	_, err = fault.ParseCut("rst")
	fmt.Println(err)
	// Output:
	// stall false <nil>
	// unknown cut "rst" (valid: reset, close, blackhole, kill-helper, stall, vanish, server-crash, reboot, no-exit-status, eof-only, wedge-helper, expire-helper)
}
