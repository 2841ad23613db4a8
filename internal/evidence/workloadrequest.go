package evidence

import "github.com/sshrig/sshrig/internal/control"

// WorkloadRequest is the ordinal (1-based, among the exec and shell requests
// the server accepted) of the request whose process tree wrote the case's
// start marker, when the server could not have recognised it on arrival: an
// exec whose command does not carry the markers, such as `sh FILE` run after
// the script was uploaded over SFTP or SCP. It is 0 when there was no
// workload, or when it was a marker-wrapped exec or a shell, which the
// server finds by itself (control.Arm.WorkloadRequest).
//
// A preflight's answer lets later cases hold the exec moment at the same
// request; a tool whose conversation is the same in every case (an upload,
// then the run) is then cut before its uploaded script starts.
func (c Case) WorkloadRequest() int {
	var w *control.Event
	for i := range c.events {
		if e := &c.events[i]; e.Kind == control.Workload && e.MarkerID == c.id {
			w = e
			break
		}
	}
	if w == nil || w.Request != "exec" {
		return 0
	}
	n := 0
	for _, e := range c.events {
		if e.Kind == control.ExecReceived && e.Ref == w.Ref && e.MarkerID != "" {
			return 0 // the server sees the markers in the request itself
		}
		if e.Kind == control.RequestSeen && (e.Request == "exec" || e.Request == "shell") &&
			e.Accepted != nil && *e.Accepted && e.Seq <= w.Ref {
			n++
		}
	}
	return n
}
