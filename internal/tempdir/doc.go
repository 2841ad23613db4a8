// Package tempdir owns the rig's private temporary directories (the tool's
// keys, the server's scratch and gates, an agent's state): each is named
// for the process that made it, so that one a killed run left behind can
// be told from one a live run uses, and sshrig gc removes it. A run that
// ends in any way it can see (done, failed, interrupted) removes its own;
// one killed with SIGKILL, or whose machine crashed, cannot.
package tempdir
