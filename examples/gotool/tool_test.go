package gotool_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sshrig/sshrig/examples/gotool"
	"github.com/sshrig/sshrig/sshrigtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The honest tool passes every case of the default matrix that applies to it.
func TestHonest(t *testing.T) {
	h := sshrigtest.New(t)
	h.Run(t, sshrigtest.Func("honest", gotool.Honest))
}
