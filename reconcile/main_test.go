package reconcile_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test left a goroutine behind (a follower's
// session, the plain server's handlers).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
