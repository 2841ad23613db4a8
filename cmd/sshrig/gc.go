package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sshrig/sshrig/containers"
	"github.com/sshrig/sshrig/internal/kernelnet"
	"github.com/sshrig/sshrig/internal/tempdir"
)

func newGCCmd() *cobra.Command {
	var o containers.GCOptions
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove what crashed runs left behind: processes in the kernel network, temporary directories, containers",
		Long: `gc first kills every process living in a network namespace of the kernel
network (--net kernel) whose rig no longer runs: a tool, or its child, that
outlived a crashed or killed run and keeps the namespace alive. The kernel then
frees the namespace with its veth pair and nftables tables. Namespaces of runs
still in progress are theirs and stay.

Then it removes the temporary directories of rigs that no longer run (in
$TMPDIR, or /tmp: sshrig-keys-PID-*, which hold the tool's private key,
sshrig-scratch-PID-*, sshrig-gates-PID-*, sshrig-agent-state-PID-*): a
run removes its own when it ends, fails or is interrupted; one killed with
SIGKILL cannot. A directory whose process still runs stays.

Then it removes every Docker container labelled ` + containers.LabelRig + `=true, running
or not: whatever a crashed or killed run of --target container left behind.
A run removes its own container when it ends, fails or is interrupted, so gc
is for runs that could not (SIGKILL, a crash, a reboot). It also removes the
containers of runs still in progress: run it when none is.

With --images it also removes the cached server images (` + containers.ImageRepo + `:<hash>);
the next container run builds its image again.

With --run ID it removes only what the run of that id created (the label
` + containers.LabelRun + `=ID: its containers, and with --images the images it built):
the containers of other runs, in progress or not, and of other users of the
same Docker engine stay, and so do temporary directories. A container run
prints its id as it starts; set it with 'sshrig run --target container
--run-id ID'.

It prints one line per object removed. Exit codes: 0 done (also when there was
nothing to remove), 3 no Docker engine or a removal failed.`,
		Example: `  sshrig gc
  sshrig gc --images
  sshrig gc --run nightly-42 --images`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			emptied, kerr := kernelnet.GC()
			for _, ns := range emptied {
				fmt.Fprintf(out, "killed %s, left in namespace %s of rig %d (gone)\n", pidList(ns.PIDs), ns.ID, ns.Rig)
			}
			if kerr != nil {
				return rigError(fmt.Errorf("gc: %w", kerr))
			}
			var temps int
			if o.Run == "" {
				var terr error
				if temps, terr = gcTempDirs(out, ""); terr != nil {
					return rigError(fmt.Errorf("gc: %w", terr))
				}
			}
			removed, err := containers.GC(cmd.Context(), o)
			for _, r := range removed {
				fmt.Fprintf(out, "removed %s\n", r)
			}
			if err != nil {
				// No Docker engine (containers.ErrNoDocker) or a removal failed.
				return rigError(fmt.Errorf("gc: %w", err))
			}
			if len(removed) == 0 && len(emptied)+temps > 0 {
				return nil
			}
			if len(removed) == 0 && o.Run != "" {
				fmt.Fprintf(out, "nothing to remove of run %s\n", o.Run)
			} else if len(removed) == 0 {
				fmt.Fprintln(out, "nothing to remove")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&o.Images, "images", false, "also remove the cached server images")
	cmd.Flags().StringVar(&o.Run, "run", "", "remove only what the run of this id created (its "+containers.LabelRun+" label)")
	return cmd
}

// gcTempDirs removes the temporary directories (keys, scratch, gates, an
// agent's state) of rigs that no longer run, in dir ("" for the system's),
// one line each; it returns how many it removed.
func gcTempDirs(out io.Writer, dir string) (int, error) {
	orphans, err := tempdir.Orphans(dir)
	if err != nil {
		return 0, err
	}
	for i, o := range orphans {
		if err := os.RemoveAll(o.Path); err != nil {
			return i, err
		}
		fmt.Fprintf(out, "removed temporary directory %s (%s of process %d, gone)\n", o.Path, o.Kind, o.PID)
	}
	return len(orphans), nil
}

// pidList is "process 12" or "processes 12, 13".
func pidList(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	if len(s) == 1 {
		return "process " + s[0]
	}
	return "processes " + strings.Join(s, ", ")
}
