package tool_test

import (
	"fmt"
	"os"
	"time"

	"github.com/sshrig/sshrig/tool"
)

// An external tool reads its target from the environment the rig sets.
func ExampleFromEnv() {
	env := map[string]string{
		tool.EnvAddr: "127.0.0.1:2222", tool.EnvUser: "rig", tool.EnvIdentity: "/tmp/id",
		tool.EnvKnownHosts: "/tmp/known_hosts", tool.EnvCorrelationID: "c-1", tool.EnvOperation: "run_workload",
		tool.EnvCommand: "true", tool.EnvDeadlineMS: "5000",
	}
	t, err := tool.FromEnv(func(k string) string { return env[k] })
	fmt.Println(t.Host(), t.Port(), t.Deadline == 5*time.Second, err)

	_, err = tool.FromEnv(os.Getenv) // nothing set here
	fmt.Println(err != nil)
	// Output:
	// 127.0.0.1 2222 true <nil>
	// true
}
