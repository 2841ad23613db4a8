package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/sshrig/sshrig/internal/server"
	"github.com/sshrig/sshrig/target"
)

func newServeCmd() *cobra.Command {
	var o server.ServeOptions
	var lifeline bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the rig's SSH server (the remote side of every case)",
		Long: `serve runs the rig's SSH server: the same server the embedded target runs in
process and the container target runs in a container. The rig drives it through
its control port; on its own it accepts nothing until a rig connects.

The control token (hex, at least 16 bytes) is read from $` + target.TokenEnv + `;
the SSH host key (a PEM private key) from $` + target.HostKeyEnv + `, when set, else it is
fresh.
Once both listeners are up, serve prints one JSON line with their addresses.
It runs until SIGINT or SIGTERM (or, with --stdin-lifeline, until its stdin
closes), then kills every command it started.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.TokenHex = os.Getenv(target.TokenEnv)
			if o.TokenHex == "" {
				return usageError("serve: $%s is not set (hex control token, at least 16 bytes)", target.TokenEnv)
			}
			o.HostKeyPEM = os.Getenv(target.HostKeyEnv)
			if lifeline {
				o.Lifeline = cmd.InOrStdin()
			}
			err := server.Serve(cmd.Context(), o, cmd.OutOrStdout())
			if err == server.ErrBadToken {
				return usageError("serve: $%s: %v", target.TokenEnv, err)
			}
			if err != nil {
				return rigError(err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.SSHListen, "ssh-listen", "127.0.0.1:0", "address for proxied SSH connections")
	f.StringVar(&o.ControlListen, "control-listen", "127.0.0.1:0", "address for the rig's control connection")
	f.StringVar(&o.Scratch, "scratch", "", "working directory for commands (default: a new temporary directory, removed on exit)")
	f.StringVar(&o.Shell, "shell", "/bin/sh", "shell that runs commands as SHELL -c COMMAND")
	f.BoolVar(&lifeline, "stdin-lifeline", false, "exit when stdin closes (for a parent that must not leave the server behind)")
	return cmd
}
