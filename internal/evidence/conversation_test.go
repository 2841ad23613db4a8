package evidence

import (
	"strings"
	"testing"

	"github.com/sshrig/sshrig/internal/control"
)

// conversationEvents is an sftp upload followed by a run: a stat of the
// file (found or not, as the host's state has it), the upload, the exec.
func conversationEvents(statFound bool, path string) []control.Event {
	yes := true
	found := statFound
	req := func(seq uint64, conn, session int, name, detail string, accepted *bool) control.Event {
		return control.Event{Seq: seq, Kind: control.RequestSeen, Conn: conn, Session: session, Request: name, Step: int(seq), Detail: detail, Accepted: accepted}
	}
	return []control.Event{
		req(1, 1, 0, "connection", "", &yes),
		req(2, 1, 1, "session", "", &yes),
		req(3, 1, 1, "subsystem", "sftp", &yes),
		req(4, 1, 1, "sftp-stat", path, &found),
		req(5, 1, 1, "sftp-open", path+" (write)", &yes),
		req(6, 1, 1, "sftp-write", path+" @0 +10", &yes),
		req(7, 1, 1, "sftp-close", path, &yes),
		req(8, 2, 0, "connection", "", &yes),
		req(9, 2, 1, "session", "", &yes),
		req(10, 2, 1, "exec", "", &yes),
	}
}

// The conversation is what the tool asked: the preflight's stat that found
// no file, against a case whose stat found one (a host with state left
// over), is the same conversation; so is a file named afresh.
func TestConversationComparesRequestsNotAnswers(t *testing.T) {
	preflight := Of(conversationEvents(false, "job.sh"), "c-1").Conversation()
	for _, tc := range []struct {
		name  string
		found bool
		path  string
	}{
		{"stat answered otherwise", true, "job.sh"},
		{"another file name", false, "job-7f3a.sh"},
	} {
		if d := ConversationDiffers(preflight, Of(conversationEvents(tc.found, tc.path), "c-2")); d != "" {
			t.Errorf("%s: ConversationDiffers = %q, want none", tc.name, d)
		}
	}

	// A request the tool added or changed is still a difference.
	evs := conversationEvents(false, "job.sh")
	evs[4].Request = "sftp-mkdir"
	d := ConversationDiffers(preflight, Of(evs, "c-3"))
	if !strings.Contains(d, "request 5: the preflight's was sftp-open, this case's sftp-mkdir (step 5)") {
		t.Errorf("changed request: ConversationDiffers = %q, want it named", d)
	}
	more := append(conversationEvents(false, "job.sh"), conversationEvents(false, "job.sh")[7])
	more[len(more)-1].Seq, more[len(more)-1].Step = 11, 11
	if d := ConversationDiffers(preflight, Of(more, "c-4")); !strings.Contains(d, "this case sent connection (step 11)") {
		t.Errorf("added request: ConversationDiffers = %q, want it named", d)
	}
}

// TestUpload: the server's measurement of a cut upload is the case's
// upload, field for field; a case with none has none.
func TestUpload(t *testing.T) {
	evs := conversationEvents(false, "/home/u/job.sh")
	if u := Of(evs, "c-1").Upload(); u != nil {
		t.Errorf("upload %+v of a case that cut none", u)
	}
	st := &control.Upload{Path: "/home/u/job.sh", Arrived: 64, Size: 64, SHA256: "ab", TempFiles: []string{".job.sh.part"}}
	evs = append(evs, control.Event{Seq: 11, Kind: control.UploadState, Upload: st})
	u := Of(evs, "c-1").Upload()
	if u == nil || u.Path != st.Path || u.Arrived != 64 || u.Size != 64 || u.SHA256 != "ab" || len(u.TempFiles) != 1 || !u.LeftPartial() {
		t.Errorf("upload %+v, want the server's %+v, left partial", u, st)
	}
}
