// Command sshrig is an SSH interruption test rig: it proves, case by case,
// whether a tool that runs commands over SSH tells the truth when the
// connection dies at an exact moment of the exchange.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
