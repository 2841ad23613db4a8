package evidence

import (
	"fmt"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/control"
	"github.com/sshrig/sshrig/report"
)

// Conversation is every request of the case's conversation, in the order
// the server received them, each placed against the workload (the request
// whose process tree wrote the case's start marker).
func (c Case) Conversation() []fault.Request {
	var workloadSeq uint64
	var workload Session
	for _, e := range c.events {
		if e.Kind == control.Workload && e.MarkerID == c.id {
			workloadSeq, workload = e.Ref, SessionOf(e)
			break
		}
	}
	var out []fault.Request
	seen := map[string]int{}
	place := fault.NoWorkload
	if workloadSeq != 0 {
		place = fault.BeforeWorkload
	}
	for _, e := range c.events {
		if e.Kind == control.ExitSent && place == fault.DuringWorkload && SessionOf(e) == workload {
			place = fault.AfterWorkload
		}
		if e.Kind != control.RequestSeen {
			continue
		}
		seen[e.Request]++
		r := fault.Request{Step: e.Step, Conn: e.Conn, Session: e.Session, Name: e.Request, Detail: e.Detail,
			Accepted: e.Accepted != nil && *e.Accepted, Occurrence: seen[e.Request], Place: place}
		if e.Seq == workloadSeq {
			r.Place, place = fault.WorkloadPlace, fault.DuringWorkload
		}
		out = append(out, r)
	}
	return out
}

// shape is a conversation as comparisons see it: what the tool asked, in
// order. Incidental requests are left out, and a run of requests of one
// name (the writes of an upload, however the client chunks it) counts once.
// The server's answers are not part of it: whether an sftp-stat found its
// file, or an env was accepted, is the host's state, not the tool's course.
func shape(rs []fault.Request) []fault.Request {
	var out []fault.Request
	for _, r := range rs {
		if fault.Incidental(r.Name) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Name == r.Name {
			continue
		}
		out = append(out, r)
	}
	return out
}

// Departure is where the case's exchange stopped following the tool's own
// course because of the rig: the first hold at the armed moment (every cut
// follows one), or the first refusal the case arranged (a denied exec, a
// rejected session or key). A connection's end is no departure: tools end
// connections of their own. Requests from then on are not compared with the
// preflight's: the tool answers a fault there. It is 0 when nothing
// departed.
func (c Case) Departure() uint64 {
	var request uint64 // the last request's event
	for _, e := range c.events {
		switch {
		case e.Kind == control.RequestSeen:
			request = e.Seq
		case e.Kind == control.ExecRefused, e.Kind == control.SessionRefused:
			// The refusal follows the refused request's own record.
			return request
		case e.Kind == control.MomentReached && e.Hold, e.Kind == control.AuthRejected:
			return e.Seq
		}
	}
	return 0
}

// ConversationDiffers compares the case's conversation with the one a
// preflight learned and names the first difference, or returns "". Only
// the part before the case's departure is compared (all of it when nothing
// departed): after a cut, the tool answers the fault, not its routine.
//
// What is compared is what the tool asked: each request's kind, in order.
// How the server answered is not (a file the preflight's stat did not find
// yet, a refused env): a difference the tool could not have caused is no
// departure of the tool's. Nor are the requests' targets (paths): a step
// case holds at a request by its kind and occurrence (fault.Step), so a
// tool that names its files afresh each run (a temporary upload name) still
// has its cuts where their moments say.
func ConversationDiffers(preflight []fault.Request, c Case) string {
	// Conversation has a request for each RequestSeen event, in order:
	// those before the departure are its first ones.
	departed, before := c.Departure(), 0
	for _, e := range c.events {
		if e.Kind == control.RequestSeen && (departed == 0 || e.Seq < departed) {
			before++
		}
	}
	got := c.Conversation()[:before]
	want, have := shape(preflight), shape(got)
	for i := range have {
		if i >= len(want) {
			return fmt.Sprintf("after the preflight's last request (%s), this case sent %s (step %d)", want[len(want)-1].Name, have[i].Name, have[i].Step)
		}
		if have[i].Name != want[i].Name {
			return fmt.Sprintf("request %d: the preflight's was %s, this case's %s (step %d)", i+1, want[i].Name, have[i].Name, have[i].Step)
		}
	}
	// A case that sent less than the preflight did stopped early (the tool
	// gave up, or died): the verdict judges that; nothing it sent was
	// elsewhere than the moment expects.
	return ""
}

// MultiStep reports whether a conversation has more than one connection,
// one session and the workload's request: a tool whose cases rely on it
// (step cases, an uploaded workload) and must hold it in every case.
// Tools that send one exec are not compared: one that pools connections
// across cases sends a different opening in each, harmlessly.
func MultiStep(conv []fault.Request) bool {
	n := 0
	for _, r := range shape(conv) {
		// A jump host's tunnel is how the tool reaches the host, as a
		// connection is.
		if r.Name != "connection" && r.Name != control.StepDirectTCPIP && r.Name != "session" && r.Place != fault.WorkloadPlace {
			n++
		}
	}
	return n > 0
}

// Upload is what the upload a step case cut left on the case's host, as
// the server measured it when the case ended (its UploadState event); nil
// when the case cut no upload.
func (c Case) Upload() *report.Upload {
	for _, e := range c.events {
		if e.Kind == control.UploadState && e.Upload != nil {
			u := e.Upload
			return &report.Upload{Path: u.Path, Arrived: u.Arrived, Size: u.Size, SHA256: u.SHA256,
				TempFiles: u.TempFiles, Absent: u.Absent, Rewritten: u.Rewritten}
		}
	}
	return nil
}
