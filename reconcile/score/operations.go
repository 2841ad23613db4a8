package score

import (
	"fmt"
	"sort"
	"strings"
)

// Variant is how an operation's command behaves in one case run.
type Variant int

const (
	// Succeed does the work and exits 0.
	Succeed Variant = iota
	// Fail attempts the work, fails, and exits FailExitCode.
	Fail
	// Block begins the work, prints ReadyLine on stdout, and then blocks
	// until the rig ends the case (which kills it): the still-running
	// state. It must print ReadyLine only once the work has begun, since
	// the rig runs the probe as soon as it reads the line.
	Block
)

// FailExitCode is the exit code of an operation's Fail variant.
const FailExitCode = 3

// ReadyLine is what a Block variant prints once its work is under way.
const ReadyLine = "sshrig-reconcile: in progress"

// block is the tail of every Block variant: announce, then wait to be
// killed. The wait is the work standing still (a download that hangs, a
// health check that never passes), not a way of timing anything: the rig
// reads ReadyLine, runs the probe, establishes the truth and ends the case,
// which kills the whole process group. An hour bounds it should the rig
// itself die without ending the case.
const block = "printf '%s\\n' '" + ReadyLine + "'\nexec sleep 3600"

// Operation is something a tool does over SSH, as far as reconciliation is
// concerned: the command (in each variant), and what the target must look
// like before it runs. There is no operations registry in the rig yet; these
// are the operations `sshrig reconcile --operation` knows, kept small.
//
// Every command runs on the target with the scratch directory (the ledger's
// directory) as its working directory, so relative paths name files there.
type Operation struct {
	Name    string
	Summary string
	// Setup runs on the target (not marker-wrapped, over its own SSH
	// connection) before each state is produced, to put the world the
	// probe relies on back in its starting shape. It must exit 0.
	Setup string
	// Teardown runs on the target after each state's probe, whatever
	// happened; its failures are reported, not fatal.
	Teardown string
	// Command returns the command of the variant, before marker wrapping.
	Command func(Variant) string
	// Example is the example probe, under docs/examples/, that scores every
	// state of this operation correctly.
	Example string
}

// DefaultOperation is the rig's default workload (rig.DefaultOperation).
const DefaultOperation = "run_workload"

// defaultWorkload is rig.Case's default workload (a test keeps the two equal):
// two lines of output, then the exit code.
const defaultWorkload = "printf 'sshrig workload: step one\\n'; printf 'sshrig workload: step two\\n'"

// The demo operations keep their state in this directory of the target's
// scratch directory.
const demoDir = "reconcile-demo"

var operations = []Operation{
	{
		Name:    DefaultOperation,
		Summary: "the rig's default workload: prints two lines (the Fail variant then exits 3)",
		Command: func(v Variant) string {
			switch v {
			case Fail:
				return defaultWorkload + fmt.Sprintf("; exit %d", FailExitCode)
			case Block:
				return "printf 'sshrig workload: step one\\n'\n" + block
			}
			return defaultWorkload
		},
		Example: "docs/examples/reconcile-markers.sh",
	},
	{
		Name:    "restart_service",
		Summary: "restarts a tiny demo service on the target (" + demoDir + "/service.pid)",
		// The Fail variant stops the instance and exits 3 without starting
		// a new one; the Block variant restarts it and then waits for a
		// health check that never passes.
		//
		// The service is a background process that only waits (a stand-in
		// for a daemon), with its stdio detached so the SSH session that
		// starts it can end. Like a service manager, whoever starts it
		// records "PID START_SECONDS" in service.pid.
		Setup: "mkdir -p " + demoDir + " && cd " + demoDir + " || exit 1\n" +
			stopService +
			startService,
		Teardown: "cd " + demoDir + " 2>/dev/null || exit 0\n" + stopService + "cd .. && rm -rf " + demoDir,
		Command: func(v Variant) string {
			head := "cd " + demoDir + " || exit 1\n" +
				"old=$(cut -d' ' -f1 service.pid) || exit 1\n"
			switch v {
			case Fail:
				return head + "kill \"$old\" 2>/dev/null\n" +
					"echo 'demo service: the new instance failed to start' >&2\n" +
					fmt.Sprintf("exit %d", FailExitCode)
			case Block:
				// Restarted, then waiting for the new instance to
				// become healthy, which it never does.
				return head + restart + block
			}
			return head + restart + "echo \"demo service restarted: pid $old -> $new\""
		},
		Example: "docs/examples/reconcile-restart.sh",
	},
	{
		Name:    "install_package",
		Summary: "installs version 2.0 of a demo package on the target (" + demoDir + "/installed-version)",
		// The set-up installs 1.0; the Fail variant's download fails (1.0
		// stays, exit 3); the Block variant is still downloading.
		Setup:    "mkdir -p " + demoDir + " && echo 1.0 >" + demoDir + "/installed-version",
		Teardown: "rm -rf " + demoDir,
		Command: func(v Variant) string {
			switch v {
			case Fail:
				return "echo 'demo 2.0: download failed' >&2\n" + fmt.Sprintf("exit %d", FailExitCode)
			case Block:
				// Downloading, which never finishes.
				return "echo 'installing demo 2.0: downloading'\n" + block
			}
			return "cd " + demoDir + " || exit 1\n" +
				"echo 'installing demo 2.0'\n" +
				"echo 2.0 >installed-version.new && mv installed-version.new installed-version"
		},
		Example: "docs/examples/reconcile-install.sh",
	},
}

// The demo service's pieces, run in demoDir.
const (
	stopService = "if [ -s service.pid ]; then kill \"$(cut -d' ' -f1 service.pid)\" 2>/dev/null; fi\n"
	// startService starts an instance and records it. $! is the pid of the
	// background sleep itself, so the recorded pid is the service. Its
	// seconds come from the clock the start marker's came from, the
	// shell's EPOCHSECONDS, where the shell has one: date(1) reads
	// another clock (time(2), the kernel's coarse one), and across a
	// second boundary the two put a later event a second earlier, which
	// would make a restarted service look older than its restart.
	startService = "sleep 3600 </dev/null >/dev/null 2>&1 &\n" +
		"echo \"$! ${EPOCHSECONDS:-$(date +%s)}\" >service.pid.new && mv service.pid.new service.pid\n"
	restart = "kill \"$old\" || exit 1\n" +
		startService +
		"new=$(cut -d' ' -f1 service.pid)\n"
)

// Operations returns every operation, the default first.
func Operations() []Operation { return append([]Operation(nil), operations...) }

// OperationNames lists the operations' names, sorted.
func OperationNames() []string {
	var names []string
	for _, o := range operations {
		names = append(names, o.Name)
	}
	sort.Strings(names)
	return names
}

// LookupOperation returns the operation called name.
func LookupOperation(name string) (Operation, error) {
	for _, o := range operations {
		if o.Name == name {
			return o, nil
		}
	}
	return Operation{}, fmt.Errorf("unknown operation %q (valid: %s)", name, strings.Join(OperationNames(), ", "))
}
