package markers

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func unix(sec int64) time.Time { return time.Unix(sec, 0).UTC() }

func TestParseGood(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []Entry
	}{
		{name: "empty file", input: "", want: nil},
		{
			name:  "start and complete",
			input: "case-1 start 1700000000 4242\ncase-1 complete 0 1700000001 4242\n",
			want: []Entry{
				{Line: 1, ID: "case-1", Kind: Start, Time: unix(1700000000), PID: 4242},
				{Line: 2, ID: "case-1", Kind: Complete, ExitCode: 0, Time: unix(1700000001), PID: 4242},
			},
		},
		{
			name:  "no trailing newline",
			input: "a start 1 2\na complete 255 3 2",
			want: []Entry{
				{Line: 1, ID: "a", Kind: Start, Time: unix(1), PID: 2},
				{Line: 2, ID: "a", Kind: Complete, ExitCode: 255, Time: unix(3), PID: 2},
			},
		},
		{
			name:  "bounds",
			input: "x.y_z:0-9 start 0 1\nZ complete 7 253402300799 2147483647\n",
			want: []Entry{
				{Line: 1, ID: "x.y_z:0-9", Kind: Start, Time: unix(0), PID: 1},
				{Line: 2, ID: "Z", Kind: Complete, ExitCode: 7, Time: unix(253402300799), PID: 2147483647},
			},
		},
		{
			name:  "no clock (a shell without EPOCHSECONDS)",
			input: "case-2 start - 4242\ncase-2 complete 3 - 4242\n",
			want: []Entry{
				{Line: 1, ID: "case-2", Kind: Start, PID: 4242},
				{Line: 2, ID: "case-2", Kind: Complete, ExitCode: 3, PID: 4242},
			},
		},
		{
			name:  "operation id: a run that ran the work, then one that did not",
			input: "case-3 start 1700000000 4242 op=op-1\ncase-3 complete 0 1700000002 4242\ncase-3 dedup - 4300 op=op-1\n",
			want: []Entry{
				{Line: 1, ID: "case-3", Kind: Start, Time: unix(1700000000), PID: 4242, OperationID: "op-1"},
				{Line: 2, ID: "case-3", Kind: Complete, Time: unix(1700000002), PID: 4242},
				{Line: 3, ID: "case-3", Kind: Dedup, PID: 4300, OperationID: "op-1"},
			},
		},
		{
			name:  "longest id",
			input: strings.Repeat("i", 128) + " start 5 6\n",
			want:  []Entry{{Line: 1, ID: strings.Repeat("i", 128), Kind: Start, Time: unix(5), PID: 6}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseBytes([]byte(tt.input))
			if len(got.Malformed) != 0 {
				t.Fatalf("unexpected malformed lines: %v", got.Malformed)
			}
			if !reflect.DeepEqual(got.Entries, tt.want) {
				t.Fatalf("entries = %+v\nwant %+v", got.Entries, tt.want)
			}
			for _, e := range got.Entries {
				if line := strings.Split(tt.input, "\n")[e.Line-1]; e.String() != line {
					t.Errorf("Entry.String() = %q, want the line %q", e.String(), line)
				}
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	const good = "ok start 1700000000 99"
	const idHint = " not allowed (use A-Z a-z 0-9 . _ : -, starting with a letter or digit)"
	tests := []struct {
		name       string
		bad        string // placed as line 2, between two good lines
		wantReason string
	}{
		{name: "empty line", bad: "", wantReason: "empty line"},
		{name: "CRLF", bad: "a start 1 2\r", wantReason: "carriage return at end of line (CRLF line ending?)"},
		{name: "leading space", bad: " a start 1 2", wantReason: "leading space"},
		{name: "trailing space", bad: "a start 1 2 ", wantReason: "trailing space"},
		{name: "two spaces", bad: "a start  1 2", wantReason: "two spaces at byte 7 (fields are separated by single spaces)"},
		{name: "tab separated", bad: "a\tstart\t1\t2", wantReason: "want at least 2 fields (id and event), got 1"},
		{name: "one field", bad: "a", wantReason: "want at least 2 fields (id and event), got 1"},
		{name: "unknown event", bad: "a begin 1 2", wantReason: `unknown event "begin" (want start, complete or dedup)`},
		{name: "event in capitals", bad: "a START 1 2", wantReason: `unknown event "START" (want start, complete or dedup)`},
		{name: "start missing pid", bad: "a start 1", wantReason: "want 4 or 5 fields for start, got 3"},
		{name: "start extra field", bad: "a start 1 2 3", wantReason: `field 5 of start is "3", want op= and an operation id`},
		{name: "start two extra fields", bad: "a start 1 2 op=x y", wantReason: "want 4 or 5 fields for start, got 6"},
		{name: "start empty operation id", bad: "a start 1 2 op=", wantReason: "invalid operation id: empty" + idHint[len(" not allowed"):]},
		{name: "start operation id with quote", bad: "a start 1 2 op=x'y", wantReason: `invalid operation id: character '\'' at 1` + idHint},
		{name: "start operation field in capitals", bad: "a start 1 2 OP=x", wantReason: `field 5 of start is "OP=x", want op= and an operation id`},
		{name: "dedup without operation id", bad: "a dedup 1 2", wantReason: "want 5 fields for dedup, got 4"},
		{name: "dedup with an exit code", bad: "a dedup 0 1 2 op=x", wantReason: "want 5 fields for dedup, got 6"},
		{name: "dedup operation id too long", bad: "a dedup 1 2 op=" + strings.Repeat("o", 129), wantReason: "invalid operation id: 129 characters, longer than 128"},
		{name: "complete with operation id", bad: "a complete 0 1 2 op=x", wantReason: "want 5 fields for complete, got 6"},
		{name: "complete missing exit code", bad: "a complete 1 2", wantReason: "want 5 fields for complete, got 4"},
		{name: "complete extra field", bad: "a complete 0 1 2 3", wantReason: "want 5 fields for complete, got 6"},
		{name: "id with slash", bad: "a/b start 1 2", wantReason: "invalid id: character '/' at 1" + idHint},
		{name: "id starting with dash", bad: "-a start 1 2", wantReason: "invalid id: character '-' at 0" + idHint},
		{name: "id with NUL", bad: "a\x00 start 1 2", wantReason: `invalid id: character '\x00' at 1` + idHint},
		{name: "id too long", bad: strings.Repeat("a", 129) + " start 1 2", wantReason: "invalid id: 129 characters, longer than 128"},
		{name: "exit code too big", bad: "a complete 300 1 2", wantReason: "exit code 300 out of range 0..255"},
		{name: "exit code huge", bad: "a complete 99999999999999999999999 1 2", wantReason: "exit code 99999999999999999999999 out of range 0..255"},
		{name: "exit code negative", bad: "a complete -1 1 2", wantReason: `exit code "-1" is not a decimal number`},
		{name: "exit code with plus", bad: "a complete +1 1 2", wantReason: `exit code "+1" is not a decimal number`},
		{name: "exit code leading zero", bad: "a complete 01 1 2", wantReason: `exit code "01" has a leading zero`},
		{name: "seconds not a number", bad: "a start 17e8 2", wantReason: `unix seconds "17e8" is not a decimal number`},
		{name: "seconds empty from failed date", bad: "a start  2", wantReason: "two spaces at byte 7 (fields are separated by single spaces)"},
		{name: "seconds beyond year 9999", bad: "a start 253402300800 2", wantReason: "unix seconds 253402300800 out of range 0..253402300799"},
		{name: "seconds negative", bad: "a start -5 2", wantReason: `unix seconds "-5" is not a decimal number`},
		{name: "two dashes for seconds", bad: "a start -- 2", wantReason: `unix seconds "--" is not a decimal number`},
		{name: "no clock in place of the exit code", bad: "a complete - 5 2", wantReason: `exit code "-" is not a decimal number`},
		{name: "pid zero", bad: "a start 1 0", wantReason: "pid 0 out of range 1..2147483647"},
		{name: "pid too big", bad: "a start 1 2147483648", wantReason: "pid 2147483648 out of range 1..2147483647"},
		{name: "pid not a number", bad: "a start 1 $$", wantReason: `pid "$$" is not a decimal number`},
		{name: "pid leading zero", bad: "a start 1 042", wantReason: `pid "042" has a leading zero`},
		{name: "partial write", bad: "a complete 0 17000", wantReason: "want 5 fields for complete, got 4"},
		{name: "binary garbage", bad: "\xff\xfe\x00", wantReason: "want at least 2 fields (id and event), got 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := good + "\n" + tt.bad + "\n" + good + "\n"
			got := ParseBytes([]byte(input))
			want := []LineError{{Line: 2, Text: tt.bad, Reason: tt.wantReason}}
			if !reflect.DeepEqual(got.Malformed, want) {
				t.Fatalf("malformed = %#v\nwant %#v", got.Malformed, want)
			}
			if len(got.Entries) != 2 || got.Entries[0].Line != 1 || got.Entries[1].Line != 3 {
				t.Fatalf("the good lines around the bad one were not both parsed: %+v", got.Entries)
			}
		})
	}
}

func TestParseLineBoundaries(t *testing.T) {
	long := "a start 1 2" + strings.Repeat("x", 5000)
	exactly := "a start 1 " + strings.Repeat("9", MaxLineLen-len("a start 1 "))
	tests := []struct {
		name          string
		input         string
		wantEntries   int
		wantMalformed []LineError
	}{
		{name: "only a newline", input: "\n", wantMalformed: []LineError{{Line: 1, Text: "", Reason: "empty line"}}},
		{name: "blank line at end", input: "a start 1 2\n\n", wantEntries: 1, wantMalformed: []LineError{{Line: 2, Text: "", Reason: "empty line"}}},
		{name: "partial final line", input: "a start 1 2\na comp", wantEntries: 1, wantMalformed: []LineError{{Line: 2, Text: "a comp", Reason: `unknown event "comp" (want start, complete or dedup)`}}},
		{
			name:          "long line in the middle",
			input:         "a start 1 2\n" + long + "\na complete 0 1 2\n",
			wantEntries:   2,
			wantMalformed: []LineError{{Line: 2, Text: long[:80], Reason: "line is 5011 bytes, longer than 4096"}},
		},
		{
			name:          "long line at end without newline",
			input:         "a start 1 2\n" + long,
			wantEntries:   1,
			wantMalformed: []LineError{{Line: 2, Text: long[:80], Reason: "line is 5011 bytes, longer than 4096"}},
		},
		{
			name:          "one byte too long",
			input:         exactly + "9\n",
			wantMalformed: []LineError{{Line: 1, Text: exactly[:80], Reason: "line is 4097 bytes, longer than 4096"}},
		},
		{
			// Exactly MaxLineLen bytes is allowed: it is parsed and rejected
			// for what it says, with all of its text kept.
			name:          "exactly the longest line",
			input:         exactly + "\n",
			wantMalformed: []LineError{{Line: 1, Text: exactly, Reason: "pid " + exactly[len("a start 1 "):len("a start 1 ")+80] + "... out of range 1..2147483647"}},
		},
		{
			name:          "several long lines",
			input:         long + "\n" + long + "\n" + long,
			wantMalformed: []LineError{{Line: 1, Text: long[:80], Reason: "line is 5011 bytes, longer than 4096"}, {Line: 2, Text: long[:80], Reason: "line is 5011 bytes, longer than 4096"}, {Line: 3, Text: long[:80], Reason: "line is 5011 bytes, longer than 4096"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, reader := range []struct {
				name string
				wrap func(io.Reader) io.Reader
			}{
				{"whole", func(r io.Reader) io.Reader { return r }},
				{"one byte at a time", iotest.OneByteReader},
				{"half reads", iotest.HalfReader},
			} {
				got, err := Parse(reader.wrap(strings.NewReader(tt.input)))
				if err != nil {
					t.Fatalf("%s: %v", reader.name, err)
				}
				if len(got.Entries) != tt.wantEntries {
					t.Errorf("%s: %d entries, want %d: %+v", reader.name, len(got.Entries), tt.wantEntries, got.Entries)
				}
				if !reflect.DeepEqual(got.Malformed, tt.wantMalformed) {
					t.Errorf("%s: malformed = %q\nwant %q", reader.name, got.Malformed, tt.wantMalformed)
				}
			}
		})
	}
}

func TestLineErrorError(t *testing.T) {
	tests := []struct {
		err  LineError
		want string
	}{
		{LineError{Line: 7, Text: "a begin 1 2", Reason: `unknown event "begin"`}, `ledger line 7: unknown event "begin": "a begin 1 2"`},
		{LineError{Line: 1, Text: "a\tb\r", Reason: "r"}, `ledger line 1: r: "a\tb\r"`},
		{LineError{Line: 2, Text: strings.Repeat("x", 100), Reason: "r"}, `ledger line 2: r: "` + strings.Repeat("x", 80) + `"...`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %s\nwant %s", got, tt.want)
		}
	}
}

type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestParseReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	tests := []struct {
		name        string
		data        string
		wantEntries int
	}{
		{name: "after whole lines", data: "a start 1 2\na complete 0 1 2\n", wantEntries: 2},
		{name: "in the middle of a line", data: "a start 1 2\na complete 0 1", wantEntries: 1},
		{name: "in the middle of a long line", data: "a start 1 2\n" + strings.Repeat("x", 5000), wantEntries: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ledger, err := Parse(&failingReader{data: []byte(tt.data), err: boom})
			if !errors.Is(err, boom) {
				t.Fatalf("err = %v, want it to wrap %v", err, boom)
			}
			if ledger == nil || len(ledger.Entries) != tt.wantEntries || len(ledger.Malformed) != 0 {
				t.Fatalf("ledger read before the failure = %+v, want %d entries and no malformed lines (a line cut by the failure is left out)", ledger, tt.wantEntries)
			}
		})
	}
}

func intPtr(n int) *int { return &n }

func TestSummary(t *testing.T) {
	// Case "retried" ran twice (a blind retry after a cut): two starts from
	// two shells, and only the second run completed. "cut" started and never
	// completed. "garbled" only appears on a malformed line.
	const ledgerText = "retried start 100 500\n" +
		"cut start 101 600\n" +
		"retried start 110 510\n" +
		"garbled begin 111 1\n" +
		"retried complete 3 120 510\n" +
		"done start 130 700\n" +
		"done complete 0 131 700\n" +
		"done complete 9 140 700\n"
	ledger := ParseBytes([]byte(ledgerText))
	tests := []struct {
		id   string
		want Summary
	}{
		{id: "retried", want: Summary{ID: "retried", Starts: 2, Completes: 1, ExitCode: intPtr(3), FirstStart: unix(100), LastStart: unix(110), LastComplete: unix(120), PIDs: []int{500, 510}}},
		{id: "cut", want: Summary{ID: "cut", Starts: 1, FirstStart: unix(101), LastStart: unix(101), PIDs: []int{600}}},
		{id: "done", want: Summary{ID: "done", Starts: 1, Completes: 2, ExitCode: intPtr(9), FirstStart: unix(130), LastStart: unix(130), LastComplete: unix(140), PIDs: []int{700}}},
		{id: "garbled", want: Summary{ID: "garbled"}},
		{id: "never-seen", want: Summary{ID: "never-seen"}},
	}
	summaries := ledger.Summaries()
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			got := ledger.Summary(tt.id)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Summary(%q) = %s\nwant %s", tt.id, describeSummary(got), describeSummary(tt.want))
			}
			fromMap, inMap := summaries[tt.id]
			if wantInMap := tt.want.Starts+tt.want.Completes > 0; inMap != wantInMap {
				t.Fatalf("Summaries() has %q: %v, want %v", tt.id, inMap, wantInMap)
			}
			if inMap && !reflect.DeepEqual(fromMap, got) {
				t.Fatalf("Summaries()[%q] = %s, Summary() = %s", tt.id, describeSummary(fromMap), describeSummary(got))
			}
		})
	}
	if got, want := ledger.IDs(), []string{"retried", "cut", "done"}; !reflect.DeepEqual(got, want) {
		t.Errorf("IDs() = %q, want %q", got, want)
	}
	if len(summaries) != 3 {
		t.Errorf("Summaries() has %d ids, want 3", len(summaries))
	}
}

func describeSummary(s Summary) string {
	code := "nil"
	if s.ExitCode != nil {
		code = fmt.Sprint(*s.ExitCode)
	}
	return fmt.Sprintf("{ID:%s Starts:%d Completes:%d ExitCode:%s FirstStart:%d LastStart:%d LastComplete:%d PIDs:%v}",
		s.ID, s.Starts, s.Completes, code, s.FirstStart.Unix(), s.LastStart.Unix(), s.LastComplete.Unix(), s.PIDs)
}

// TestInterleavedCases builds the ledger 16 concurrent cases would leave:
// all starts in one order, the completes in another, case 5 retried and
// case 11 cut before completing.
func TestInterleavedCases(t *testing.T) {
	const cases = 16
	var b strings.Builder
	id := func(i int) string { return fmt.Sprintf("case-%02d", i) }
	for i := range cases {
		fmt.Fprintf(&b, "%s start %d %d\n", id(i), 1000+i, 100+i)
	}
	fmt.Fprintf(&b, "%s start %d %d\n", id(5), 2000, 999)
	for k := range cases {
		i := (k * 7) % cases // a fixed permutation of 0..15
		if i == 11 {
			continue
		}
		pid := 100 + i
		if i == 5 {
			pid = 999
		}
		fmt.Fprintf(&b, "%s complete %d %d %d\n", id(i), i*10, 3000+k, pid)
	}
	ledger := ParseBytes([]byte(b.String()))
	if len(ledger.Malformed) != 0 {
		t.Fatalf("malformed: %v", ledger.Malformed)
	}
	if len(ledger.Entries) != 2*cases {
		t.Fatalf("%d entries, want %d", len(ledger.Entries), 2*cases)
	}
	wantIDs := make([]string, cases)
	for i := range cases {
		wantIDs[i] = id(i)
	}
	if got := ledger.IDs(); !reflect.DeepEqual(got, wantIDs) {
		t.Fatalf("IDs() = %q, want %q", got, wantIDs)
	}
	summaries := ledger.Summaries()
	for i := range cases {
		t.Run(id(i), func(t *testing.T) {
			s := summaries[id(i)]
			wantStarts, wantCompletes, wantPIDs := 1, 1, []int{100 + i}
			switch i {
			case 5:
				wantStarts, wantPIDs = 2, []int{105, 999}
			case 11:
				wantCompletes = 0
			}
			if s.Starts != wantStarts || s.Completes != wantCompletes || !reflect.DeepEqual(s.PIDs, wantPIDs) {
				t.Fatalf("summary %s, want %d starts, %d completes, pids %v", describeSummary(s), wantStarts, wantCompletes, wantPIDs)
			}
			if wantCompletes == 1 && (s.ExitCode == nil || *s.ExitCode != i*10) {
				t.Fatalf("exit code in %s, want %d", describeSummary(s), i*10)
			}
			if wantCompletes == 0 && s.ExitCode != nil {
				t.Fatalf("exit code in %s, want nil", describeSummary(s))
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for kind, want := range map[Kind]string{Start: "start", Complete: "complete", 0: "Kind(0)", 9: "Kind(9)"} {
		if got := kind.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(kind), got, want)
		}
	}
}

func TestLines(t *testing.T) {
	in := "a start 1 7\nb start 2 8\nnot a line\na complete 3 4 7\n"
	l, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.Lines("a"), []string{"a start 1 7", "a complete 3 4 7"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Lines(a) = %q, want %q", got, want)
	}
	if got := l.Lines("z"); got == nil || len(got) != 0 {
		t.Errorf("Lines of an absent id = %#v, want an empty list", got)
	}
	var none *Ledger
	if got := none.Lines("a"); got == nil || len(got) != 0 {
		t.Errorf("Lines of a nil ledger = %#v, want an empty list", got)
	}
}
