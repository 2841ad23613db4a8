package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
)

// writeMemProfile writes a heap profile of what is still live once the run
// has ended (after a collection), so that what a long run keeps per case run
// shows up in 'go tool pprof -sample_index=inuse_space'.
func writeMemProfile(stderr io.Writer, path string) {
	if path == "" {
		return
	}
	runtime.GC()
	f, err := os.Create(path)
	if err == nil {
		err = pprof.WriteHeapProfile(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "sshrig: --memprofile: %v\n", err)
	}
}
