package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/tools"
	"github.com/sshrig/sshrig/matrix"
	"github.com/sshrig/sshrig/rig"
)

// loadMatrix loads a matrix file, or the default matrix for "". A file that
// does not load is bad input (exit 2), with every problem on its own line.
func loadMatrix(path string) ([]matrix.Case, error) {
	if path == "" {
		return matrix.DefaultMatrix(), nil
	}
	cases, err := matrix.LoadMatrixFile(path)
	if err != nil {
		return nil, usageError("matrix %s does not load:\n%v", path, err)
	}
	return cases, nil
}

// matrixFor is the matrix a run on net selects from: the matrix file, or
// the default matrix with, on the kernel network, the kernel matrix after
// it, or through a jump host (jump) the jump matrix instead
// (docs/network.md), or on a fleet (hosts > 1) the fleet matrix instead
// (docs/fleets.md).
//
// With serverFaults it is the server matrix (docs/server-faults.md): the far
// side's faults, made on the case's own connection, so neither through a
// jump host nor on a fleet, and instead of a matrix file.
func matrixFor(path string, net rig.Net, jump bool, hosts int, serverFaults bool) ([]matrix.Case, error) {
	switch {
	case serverFaults && path != "":
		return nil, usageError("--server-faults selects the server matrix: give it or --matrix, not both (a matrix file may name the far side's faults as cuts itself)")
	case serverFaults && (jump || hosts > 1):
		return nil, usageError("--server-faults: the far side's faults are made on the case's own connection: leave --jump and --hosts out")
	case serverFaults:
		return matrix.ServerMatrix(), nil
	case path == "" && jump:
		return matrix.JumpMatrix(), nil
	case path == "" && hosts > 1:
		return matrix.FleetMatrix(), nil
	}
	all, err := loadMatrix(path)
	if err == nil && path == "" && net == rig.NetKernel {
		all = append(all, matrix.KernelMatrix()...)
	}
	return all, err
}

func newCasesCmd() *cobra.Command {
	var globs, matrixFile, output, netName string
	var long, jump, serverFaults, agent bool
	var hosts int
	cmd := &cobra.Command{
		Use:   "cases",
		Short: "List (and with --matrix, validate) the cases of a matrix, one id per line",
		Long: `cases lists the cases of the default matrix, or of a matrix file given with
--matrix (docs/matrix.md), which it validates first: a file that does not load
exits 2 with every problem as FILE:LINE:COLUMN: FIELD: what is wrong. With
--net kernel it lists what 'sshrig run --net kernel' runs: the default matrix
and the kernel matrix's vanish cases after it; with --jump what 'sshrig run --jump'
runs: the cases behind a jump host (docs/network.md); with --hosts N what
'sshrig run --hosts N' runs: the cases on a fleet (docs/fleets.md); with
--server-faults what 'sshrig run --server-faults' runs: the faults the far side
makes, server-crash, reboot and no-exit-status (docs/server-faults.md); with
--agent what 'sshrig agent' runs (docs/agents.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			net, err := rig.ParseNet(netName)
			if err != nil {
				return usageError("--net: %v", err)
			}
			var all []matrix.Case
			if agent {
				if jump || hosts > 1 || serverFaults {
					return usageError("--agent lists the agent matrix: leave --jump, --hosts and --server-faults out")
				}
				all, err = agentMatrix(matrixFile)
			} else {
				all, err = matrixFor(matrixFile, net, jump, hosts, serverFaults)
			}
			if err != nil {
				return err
			}
			cases, err := matrix.Select(all, matrix.SplitGlobs(globs))
			if err != nil {
				return usageError("%v", err)
			}
			out := cmd.OutOrStdout()
			switch output {
			case "json":
				var rows []caseJSON
				for _, c := range cases {
					rows = append(rows, caseJSON{ID: c.ID, Alias: c.Alias, Moment: c.Moment.String(), Cut: c.CutName(), Disposition: c.Disposition.String(),
						ExitCode: c.ExitCode, Operation: c.Operation, Scenario: scenario(c), Expected: expected(c)})
				}
				return writeJSON(out, rows)
			case "text":
			default:
				return usageError("--output %q: want text or json", output)
			}
			if !long {
				for _, c := range cases {
					fmt.Fprintln(out, c.ID)
				}
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tALIAS\tMOMENT\tCUT\tDISPOSITION\tEXIT\tSCENARIO\tEXPECTED")
			for _, c := range cases {
				cut, alias := c.CutName(), c.Alias
				if cut == "" {
					cut = "-"
				}
				if alias == "" {
					alias = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", c.ID, alias, c.Moment, cut, c.Disposition, c.ExitCode, scenario(c), expected(c))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&globs, "cases", "", "comma-separated globs over case ids and aliases")
	cmd.Flags().StringVar(&matrixFile, "matrix", "", "matrix file (YAML, docs/matrix.md) to validate and list instead of the default matrix")
	cmd.Flags().StringVar(&netName, "net", string(rig.NetProxy), "the network whose cases to list: proxy, or kernel (adds the vanish cases)")
	cmd.Flags().BoolVar(&jump, "jump", false, "list the cases behind a jump host that 'sshrig run --jump' runs")
	cmd.Flags().IntVar(&hosts, "hosts", 0, "list the cases on a fleet that 'sshrig run --hosts N' runs")
	cmd.Flags().BoolVar(&serverFaults, "server-faults", false, "list the far side's faults that 'sshrig run --server-faults' runs: server-crash, reboot, no-exit-status")
	cmd.Flags().BoolVar(&agent, "agent", false, "list the agent matrix that 'sshrig agent' runs: the record-and-note task cut at each moment of its create, and the approval cases (docs/agents.md)")
	cmd.Flags().BoolVarP(&long, "long", "l", false, "one row per case with its moment, cut, disposition and exit code")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json (one object per case, for scripts)")
	return cmd
}

// caseJSON is a case as sshrig cases --output json prints it.
type caseJSON struct {
	ID          string `json:"id"`
	Alias       string `json:"alias,omitempty"`
	Moment      string `json:"moment"`
	Cut         string `json:"cut"`
	Disposition string `json:"disposition"`
	ExitCode    int    `json:"exit_code"`
	Operation   string `json:"operation"`
	Scenario    string `json:"scenario"`
	Expected    string `json:"expected"`
}

// toolJSON is a tool as sshrig tools --output json prints it.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func newToolsCmd() *cobra.Command {
	var long bool
	var output string
	cmd := withLong(&cobra.Command{
		Use:   "tools",
		Short: "List the built-in tools, one per line with what each gets wrong (mutants prefixed mutant:)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			switch output {
			case "json":
				return writeJSON(out, tools.Builtins())
			case "text":
			default:
				return usageError("--output %q: want text or json", output)
			}
			if !long {
				return writeToolDefects(out)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TOOL\tCAUGHT BY\tDEFECT")
			for _, b := range tools.Builtins() {
				caught := b.CaughtBy
				if caught == "" {
					caught = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", b.Name, caught, b.Defect)
			}
			return tw.Flush()
		},
	}, &long)
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json (name, caught_by, defect per tool, for scripts)")
	return cmd
}

// writeToolDefects is 'sshrig tools': each built-in tool on a line of its
// own, its name first, then what it gets wrong.
func writeToolDefects(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, b := range tools.Builtins() {
		fmt.Fprintf(tw, "%s\t%s\n", b.Name, b.Defect)
	}
	return tw.Flush()
}

func withLong(cmd *cobra.Command, long *bool) *cobra.Command {
	cmd.Flags().BoolVarP(long, "long", "l", false, "with the assertion that catches each tool's defect")
	return cmd
}

// scenario names what besides a cut the case does.
func scenario(c matrix.Case) string {
	var parts []string
	if c.Credential != 0 {
		parts = append(parts, "credential="+c.Credential.String())
	}
	if c.Refusal != 0 {
		parts = append(parts, "refusal="+c.Refusal.String())
	}
	if c.Fixture != "" {
		parts = append(parts, "fixture="+string(c.Fixture))
	}
	if c.Host != "" {
		parts = append(parts, "host=unresolvable")
	}
	if c.ChangedHostKey {
		parts = append(parts, "host_key="+matrix.HostKeyChanged)
	}
	if c.Scenario != "" {
		parts = append(parts, c.Scenario)
	}
	if c.Approval != "" {
		parts = append(parts, "approval="+c.Approval)
	}
	if c.CutsCall() {
		parts = append(parts, "call="+c.Call)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// expected is the category/retry the case's evidence calls for, or the
// moment's knowledge when that decides it.
func expected(c matrix.Case) string {
	if e := c.Expectation(); e != nil {
		return string(e.Category) + "/" + string(e.Retry)
	}
	return fault.KnowledgeAt(c.Moment, c.Cut).String()
}
