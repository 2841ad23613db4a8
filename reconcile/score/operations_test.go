package score

import (
	"strings"
	"testing"
)

// TestUnknownOperation: the error lists the operations there are. (That the
// default operation is the rig's default workload is rig's test,
// TestReconcileDefaultIsRigsWorkload: the rig imports this package.)
func TestUnknownOperation(t *testing.T) {
	if _, err := LookupOperation("nope"); err == nil || !strings.Contains(err.Error(), "valid: install_package, restart_service, run_workload") {
		t.Errorf("unknown operation: %v", err)
	}
}
