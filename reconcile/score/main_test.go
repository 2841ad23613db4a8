package score

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test left a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
