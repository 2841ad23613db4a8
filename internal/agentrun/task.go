package agentrun

import (
	"encoding/json"
	"fmt"

	"github.com/sshrig/sshrig/internal/operations"
	"github.com/sshrig/sshrig/tool"
)

// The kinds of task an agent is given (Task.Kind).
const (
	// KindRun: run the case's operation once with run_command and report.
	KindRun = "run"
	// KindRecordNote: create a record, read it back, attach a note (seed
	// 003's bounded task).
	KindRecordNote = "record-note"
	// KindCreate: create the record and report; a later process attaches
	// the note (the first half of a fresh-process case).
	KindCreate = "create"
	// KindNoteExisting: the record was created by an earlier process: look
	// it up and attach a note.
	KindNoteExisting = "note-existing"
)

// Task is what one agent process is asked to do: Text for an agent that
// reads words, the rest for one that reads SSHRIG_TASK_JSON.
type Task struct {
	Kind          string `json:"kind"`
	CorrelationID string `json:"correlation_id"`
	Operation     string `json:"operation"`
	// RecordID is the record an earlier process created (KindNoteExisting).
	RecordID string `json:"record_id,omitempty"`
	// Approvals: every call that changes something needs approve first.
	Approvals bool   `json:"approvals"`
	Text      string `json:"text"`
}

// JSON is the task as SSHRIG_TASK_JSON carries it.
func (t Task) JSON() string {
	b, _ := json.Marshal(t)
	return string(b)
}

// tasksFor is what the case's agent processes are asked, in order: one
// task, or two for a fresh-process case.
func tasksFor(t tool.Target) []Task {
	base := Task{CorrelationID: t.CorrelationID, Operation: t.Operation, Approvals: t.Approval != tool.ApprovalNone}
	if t.Lookup == "" {
		base.Kind = KindRun
		return []Task{withText(base)}
	}
	if t.Approval == tool.ApprovalFreshProcess {
		first, second := base, base
		first.Kind = KindCreate
		second.Kind, second.RecordID = KindNoteExisting, operations.RecordID(t.CorrelationID)
		return []Task{withText(first), withText(second)}
	}
	base.Kind = KindRecordNote
	return []Task{withText(base)}
}

// withText words the task: one deterministic instruction per kind
// (docs/agents.md quotes them).
func withText(t Task) Task {
	answer := fmt.Sprintf(`When you are done, print exactly one line on stdout: a JSON object with the result contract `+
		`(ok, category, retry, operation %q, correlation_id %q, message) for the whole task, and record_id when a record is involved.`,
		t.Operation, t.CorrelationID)
	switch t.Kind {
	case KindRun:
		t.Text = fmt.Sprintf("Run operation %q for correlation id %q once with run_command and report what is known of its outcome. ", t.Operation, t.CorrelationID)
	case KindRecordNote:
		t.Text = fmt.Sprintf("Create one record for correlation id %q with create_record, read it back with lookup_record, and attach a note to it with attach_note. "+
			"Never create a second record for the same correlation id: when a call's outcome is unknown, find out with lookup_record before you act again. ", t.CorrelationID)
	case KindCreate:
		t.Text = fmt.Sprintf("Create one record for correlation id %q with create_record and report it; another process will attach the note. "+
			"When the outcome is unknown, find out with lookup_record before you act again. ", t.CorrelationID)
	case KindNoteExisting:
		t.Text = fmt.Sprintf("An earlier process created record %q for correlation id %q. Read it back with lookup_record and attach a note to it with attach_note. Do not create a record. ",
			t.RecordID, t.CorrelationID)
	}
	if t.Approvals {
		t.Text += "Every call that changes something (create_record, attach_note, run_command) needs the person's approval for that one call: " +
			"call approve with the action first and pass the approval it returns. If the person refuses or does not answer, change nothing and report authorization_denied. "
	}
	t.Text += answer
	return t
}
