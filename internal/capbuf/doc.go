// Package capbuf owns the bounded buffers the rig captures other programs'
// output with: a tool's stdout and stderr, a remote command's output, a
// probe's answer. They keep the first bytes up to a limit, count all of them
// (so that "printed 50 MB" can be said without holding 50 MB), and can
// signal when a given line has appeared.
package capbuf
