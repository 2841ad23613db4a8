package rig_test

import (
	"fmt"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/matrix"
)

// A case built in Go gets the checks a matrix file's case gets.
func ExampleCase_Validate() {
	ok := matrix.Case{ID: "deploy.cut-while-running", Moment: fault.Started, Cut: fault.Reset, Disposition: fault.Hangup}
	fmt.Println(ok.Validate())

	bad := matrix.Case{ID: "deploy.late-kill", Moment: fault.Finished, Cut: fault.Reset, Disposition: fault.RemoteKill}
	fmt.Println(bad.Validate())
	// Output:
	// <nil>
	// case "deploy.late-kill": disposition: remote-kill cannot apply at finished: the server kills the command right after its start marker, before that moment
}

// Select picks cases by id or alias glob, in matrix order.
func ExampleSelect() {
	cases, err := matrix.Select(matrix.DefaultMatrix(), []string{"C03", "none.*"})
	if err != nil {
		panic(err)
	}
	for _, c := range cases {
		fmt.Println(c.ID, c.Moment)
	}
	// Output:
	// none.exit0 none
	// none.exit3 none
	// c03.denied-exec none
}
