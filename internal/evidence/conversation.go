package evidence

import (
	"fmt"
	"strings"

	"github.com/sshrig/sshrig/internal/control"
)

// Place says where a request of the conversation lies against the workload.
type Place string

// Places of a request.
const (
	BeforeWorkload Place = "before"   // the workload's request had not arrived
	WorkloadPlace  Place = "workload" // the request that ran the workload
	DuringWorkload Place = "during"   // after the workload's request, before its exit status was sent
	AfterWorkload  Place = "after"    // after the workload's exit status was sent
	NoWorkload     Place = ""         // the case has no workload to place it against
)

// Request is one request of the tool's SSH conversation, as the server
// received and answered it.
type Request struct {
	Step     int    `json:"step"` // the server's number, in arrival order
	Conn     int    `json:"conn"`
	Session  int    `json:"session,omitempty"`
	Name     string `json:"request"`
	Detail   string `json:"detail,omitempty"`
	Accepted bool   `json:"accepted"`
	// Occurrence is the request's place among the case's requests of the
	// same name, from 1 (fault.Step.Occurrence).
	Occurrence int   `json:"occurrence"`
	Place      Place `json:"place,omitempty"`
	seq        uint64
}

func (r Request) String() string {
	s := r.Name
	if r.Detail != "" {
		s += " " + r.Detail
	}
	if !r.Accepted {
		s += " (refused)"
	}
	return s
}

// Conversation is every request of the case's conversation, in the order
// the server received them, each placed against the workload (the request
// whose process tree wrote the case's start marker).
func (c Case) Conversation() []Request {
	var workloadSeq uint64
	var workload Session
	for _, e := range c.events {
		if e.Kind == control.Workload && e.MarkerID == c.id {
			workloadSeq, workload = e.Ref, SessionOf(e)
			break
		}
	}
	var out []Request
	seen := map[string]int{}
	place := NoWorkload
	if workloadSeq != 0 {
		place = BeforeWorkload
	}
	for _, e := range c.events {
		if e.Kind == control.ExitSent && place == DuringWorkload && SessionOf(e) == workload {
			place = AfterWorkload
		}
		if e.Kind != control.RequestSeen {
			continue
		}
		seen[e.Request]++
		r := Request{Step: e.Step, Conn: e.Conn, Session: e.Session, Name: e.Request, Detail: e.Detail,
			Accepted: e.Accepted != nil && *e.Accepted, Occurrence: seen[e.Request], Place: place, seq: e.Seq}
		if e.Seq == workloadSeq {
			r.Place, place = WorkloadPlace, DuringWorkload
		}
		out = append(out, r)
	}
	return out
}

// Incidental reports whether a request's place in a conversation depends
// on timing rather than on what the tool does: keepalives and other global
// requests, window changes, signals. Comparisons and step cases pass over
// them.
func Incidental(name string) bool {
	return strings.HasPrefix(name, control.StepGlobal) || name == "window-change" || name == "signal"
}

// shape is a conversation as comparisons see it: incidental requests left
// out, and a run of requests of one name (the writes of an upload, however
// the client chunks it) counted once.
func shape(rs []Request) []Request {
	var out []Request
	for _, r := range rs {
		if Incidental(r.Name) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Name == r.Name && out[n-1].Accepted == r.Accepted {
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
func ConversationDiffers(preflight []Request, c Case) string {
	departed := c.Departure()
	var got []Request
	for _, r := range c.Conversation() {
		if departed == 0 || r.seq < departed {
			got = append(got, r)
		}
	}
	want, have := shape(preflight), shape(got)
	for i := range have {
		if i >= len(want) {
			return fmt.Sprintf("after the preflight's last request (%s), this case sent %s (step %d)", want[len(want)-1], have[i], have[i].Step)
		}
		if have[i].Name != want[i].Name || have[i].Accepted != want[i].Accepted {
			return fmt.Sprintf("request %d: the preflight's was %s, this case's %s (step %d)", i+1, want[i], have[i], have[i].Step)
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
func MultiStep(conv []Request) bool {
	n := 0
	for _, r := range shape(conv) {
		if r.Name != "connection" && r.Name != "session" && r.Place != WorkloadPlace {
			n++
		}
	}
	return n > 0
}

// PartialUploads names the uploads a step case cut, which leave a partial
// file behind on the target (a reconcile command may need to know).
func (c Case) PartialUploads() []string {
	var out []string
	for _, e := range c.events {
		if e.Kind == control.RequestSeen && control.IsUploadCut(e.Detail) {
			out = append(out, e.Detail)
		}
	}
	return out
}
