package fault

import "strings"

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

// Request is one request of a tool's SSH conversation, as the server
// received and answered it: a preflight's conversation (report.json's
// preflight.conversation) is a list of them, and step cases are made from
// it (matrix.StepCases).
type Request struct {
	Step     int    `json:"step"` // the server's number, in arrival order
	Conn     int    `json:"conn"`
	Session  int    `json:"session,omitempty"`
	Name     string `json:"request"`
	Detail   string `json:"detail,omitempty"`
	Accepted bool   `json:"accepted"`
	// Occurrence is the request's place among the case's requests of the
	// same name, from 1 (Step.Occurrence).
	Occurrence int   `json:"occurrence"`
	Place      Place `json:"place,omitempty"`
}

// GlobalRequest prefixes the name of a connection-level (global) request
// in a conversation, e.g. "global:keepalive@openssh.com".
const GlobalRequest = "global:"

// Incidental reports whether a request's place in a conversation depends
// on timing rather than on what the tool does: keepalives and other global
// requests, window changes, signals. Comparisons and step cases pass over
// them.
func Incidental(name string) bool {
	return strings.HasPrefix(name, GlobalRequest) || name == "window-change" || name == "signal"
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
