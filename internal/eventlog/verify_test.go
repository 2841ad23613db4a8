package eventlog

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestVerifyTampering alters a real 10-line log in every way the package
// documents and checks that Verify names the right line and kind. Each row
// also runs the copy through VerifyFile, as the rig would.
func TestVerifyTampering(t *testing.T) {
	const n = 10
	raw, seqHead, hashHead := writeLog(t, n)
	orig := splitLines(raw)
	if len(orig) != n {
		t.Fatalf("log has %d lines, want %d", len(orig), n)
	}
	lines := func() [][]byte { // a fresh copy per row
		out := make([][]byte, len(orig))
		for i, l := range orig {
			out[i] = bytes.Clone(l)
		}
		return out
	}
	edit := func(k int, old, new string) func() []byte {
		return func() []byte {
			ls := lines()
			if !bytes.Contains(ls[k-1], []byte(old)) {
				t.Fatalf("line %d has no %q", k, old)
			}
			ls[k-1] = bytes.Replace(ls[k-1], []byte(old), []byte(new), 1)
			return joinLines(ls)
		}
	}
	// flipPrev changes one hex digit of line k's prev to another hex digit.
	flipPrev := func(k int) func() []byte {
		return func() []byte {
			ls := lines()
			i := bytes.Index(ls[k-1], []byte(`"prev":"`)) + len(`"prev":"`) + 10
			if ls[k-1][i] == 'a' {
				ls[k-1][i] = 'b'
			} else {
				ls[k-1][i] = 'a'
			}
			return joinLines(ls)
		}
	}
	del := func(from, to int) func() []byte {
		return func() []byte { return joinLines(slices.Delete(lines(), from-1, to)) }
	}
	insertAt := func(pos int, l func() []byte) func() []byte { // l becomes line pos
		return func() []byte { return joinLines(slices.Insert(lines(), pos-1, l())) }
	}
	copyOf := func(k int) func() []byte { return func() []byte { return bytes.Clone(orig[k-1]) } }
	swap := func(k int) func() []byte {
		return func() []byte {
			ls := lines()
			ls[k-1], ls[k] = ls[k], ls[k-1]
			return joinLines(ls)
		}
	}
	move := func(from, to int) func() []byte { // line `from` ends up as line `to`
		return func() []byte {
			ls := lines()
			l := ls[from-1]
			ls = slices.Delete(ls, from-1, from)
			return joinLines(slices.Insert(ls, to-1, l))
		}
	}
	keep := func(k int) func() []byte { return func() []byte { return joinLines(lines()[:k]) } }
	cut := func(bytesOff int) func() []byte { return func() []byte { return bytes.Clone(raw[:len(raw)-bytesOff]) } }
	replace := func(k int, s string) func() []byte {
		return func() []byte {
			ls := lines()
			ls[k-1] = []byte(s)
			return joinLines(ls)
		}
	}
	h := func(k int) [32]byte { return lineHash(orig[k-1]) }

	// heads: "" none, "hash" bare hash, "seq" seq:hash.
	tests := []struct {
		name     string
		file     func() []byte
		head     string
		wantLine int
		wantKind string // "" = intact
	}{
		{"intact", func() []byte { return raw }, "", 0, ""},
		{"intact hash head", func() []byte { return raw }, "hash", 0, ""},
		{"intact seq head", func() []byte { return raw }, "seq", 0, ""},

		// Modify a byte of line k: the next line's prev no longer matches,
		// and the line after that still chains to the next line.
		{"modify line 1", edit(1, "hello", "jello"), "", 1, KindModified},
		{"modify line 5", edit(5, "hello", "jello"), "", 5, KindModified},
		{"modify line 9", edit(9, "hello", "jello"), "", 9, KindModified},
		{"modify line 9 seq head", edit(9, "hello", "jello"), "seq", 9, KindModified},
		{"modify last line seq head", edit(10, "hello", "jello"), "seq", 10, KindModified},
		{"modify last line hash head", edit(10, "hello", "jello"), "hash", 11, KindTruncated}, // indistinguishable from a cut tail
		{"modify last line no head", edit(10, "hello", "jello"), "", 0, ""},                   // undetectable without a head
		{"modify time of line 4", edit(4, "05.004000000Z", "05.004000001Z"), "", 4, KindModified},
		{"modify prev of line 5", flipPrev(5), "", 5, KindModified},
		{"modify prev of line 1", flipPrev(1), "", 1, KindModified},
		{"modify prev of last line seq head", flipPrev(10), "seq", 10, KindModified},
		{"modify prev of last line no head", flipPrev(10), "", 9, KindModified}, // ambiguous: names the earlier candidate
		{"modify seq of line 5", edit(5, `{"seq":5,`, `{"seq":6,`), "", 5, KindModified},
		{"modify seq of line 5 down", edit(5, `{"seq":5,`, `{"seq":3,`), "", 5, KindModified},
		{"modify seq of last line seq head", edit(10, `{"seq":10,`, `{"seq":11,`), "seq", 10, KindModified},

		// Delete: a seq gap whose prev matches nothing adjacent.
		{"delete line 1", del(1, 1), "", 1, KindDeleted},
		{"delete line 5", del(5, 5), "", 5, KindDeleted},
		{"delete lines 5-7", del(5, 7), "seq", 5, KindDeleted},
		{"delete line 9", del(9, 9), "", 9, KindDeleted},
		{"delete last line seq head", del(10, 10), "seq", 10, KindTruncated},
		{"delete last line hash head", del(10, 10), "hash", 10, KindTruncated},
		{"delete last line no head", del(10, 10), "", 0, ""},

		// Insert: a line that is not in the chain.
		{"insert copy of line 3 at 7", insertAt(7, copyOf(3)), "", 7, KindInserted},
		{"insert copy of line 6 at 7", insertAt(7, copyOf(6)), "", 7, KindInserted},
		{"append copy of last line", insertAt(11, copyOf(10)), "", 11, KindInserted},
		{"insert forged chained line at 7", insertAt(7, func() []byte { return forge(7, h(6), "x") }), "", 7, KindInserted},
		{"insert forged unchained line at 7", insertAt(7, func() []byte { return forge(7, h(2), "x") }), "", 7, KindInserted},
		{"insert forged line with wild seq at 7", insertAt(7, func() []byte { return forge(99, h(2), "x") }), "", 7, KindInserted},
		{"insert forged genesis line at 1", insertAt(1, func() []byte { return forge(1, [32]byte{}, "x") }), "", 1, KindInserted},
		{"insert forged unchained line at 1", insertAt(1, func() []byte { return forge(1, h(4), "x") }), "", 1, KindInserted},
		{"append forged chained line seq head", insertAt(11, func() []byte { return forge(11, h(10), "x") }), "seq", 11, KindInserted},
		{"append forged chained line hash head", insertAt(11, func() []byte { return forge(11, h(10), "x") }), "hash", 11, KindInserted},
		{"append forged chained line no head", insertAt(11, func() []byte { return forge(11, h(10), "x") }), "", 0, ""},
		{"append forged unchained line", insertAt(11, func() []byte { return forge(11, h(3), "x") }), "", 11, KindInserted},

		// Reorder: swapped neighbours, or a line moved.
		{"swap lines 1 and 2", swap(1), "", 1, KindReordered},
		{"swap lines 5 and 6", swap(5), "", 5, KindReordered},
		{"swap lines 9 and 10", swap(9), "seq", 9, KindReordered},
		{"move line 3 to 7", move(3, 7), "", 3, KindReordered},
		{"move line 8 to 3", move(8, 3), "", 3, KindReordered},

		// Truncate: only the head recorded elsewhere shows a clean cut.
		{"keep 7 lines hash head", keep(7), "hash", 8, KindTruncated},
		{"keep 7 lines seq head", keep(7), "seq", 8, KindTruncated},
		{"keep 7 lines no head", keep(7), "", 0, ""},
		{"keep 0 lines hash head", keep(0), "hash", 1, KindTruncated},
		{"cut in last line", cut(20), "", 10, KindTruncated},
		{"cut in last line seq head", cut(20), "seq", 10, KindTruncated},
		{"cut final newline", cut(1), "", 10, KindTruncated},
		{"cut in line 5", func() []byte { return raw[:len(joinLines(orig[:4]))+30] }, "seq", 5, KindTruncated},

		// Malformed.
		{"garbage line 4", replace(4, "not json"), "", 4, KindMalformed},
		{"empty line 4", insertAt(4, func() []byte { return nil }), "", 4, KindMalformed},
		{"uppercase prev line 6", edit(6, `"prev":"`+lineHashHex(orig[4])[:4], `"prev":"`+strings.ToUpper(lineHashHex(orig[4])[:4])), "", 6, KindMalformed},
		{"missing source line 2", edit(2, `,"source":"tool"`, ""), "", 2, KindMalformed},
		{"unknown key line 3", edit(3, `,"data":`, `,"extra":1,"data":`), "", 3, KindMalformed},
		{"keys out of order line 3", edit(3, `,"case":"case_a","correlation_id":"corr-1"`, `,"correlation_id":"corr-1","case":"case_a"`), "", 3, KindMalformed},
		{"bad source line 3", edit(3, `"source":"rig"`, `"source":"Rig"`), "", 3, KindMalformed},
		{"bad event line 3", edit(3, `"event":"step"`, `"event":"Step"`), "", 3, KindMalformed},
		{"bad time line 3", edit(3, `05.003000000Z`, `05.003Z`), "", 3, KindMalformed},
		{"zero seq line 1", edit(1, `{"seq":1,`, `{"seq":0,`), "", 1, KindMalformed},
		{"crlf", func() []byte { return bytes.ReplaceAll(raw, []byte("\n"), []byte("\r\n")) }, "", 1, KindMalformed},
		{"trailing space line 8", edit(8, `"}}`, `"}} `), "", 8, KindMalformed},
		{"data not object line 8", edit(8, `"data":{"i":8,"msg":"hello"}`, `"data":[8]`), "", 8, KindMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			head := map[string]string{"": "", "hash": hashHead, "seq": seqHead}[tc.head]
			file := tc.file()
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.WriteFile(path, file, 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := VerifyFile(path, head)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantKind == "" {
				if res.Problem != nil {
					t.Fatalf("want intact, got %v", res.Problem)
				}
				return
			}
			if res.Problem == nil {
				t.Fatalf("want %s at line %d, got intact", tc.wantKind, tc.wantLine)
			}
			if res.Problem.Line != tc.wantLine || res.Problem.Kind != tc.wantKind {
				t.Fatalf("want %s at line %d, got %v", tc.wantKind, tc.wantLine, res.Problem)
			}
			t.Log(res.Problem)
		})
	}
}

// TestVerifyDetails pins the counts and wording that a reader of a report
// relies on.
func TestVerifyDetails(t *testing.T) {
	raw, seqHead, _ := writeLog(t, 10)
	ls := splitLines(raw)
	check := func(file []byte, head, want string) {
		t.Helper()
		res, err := Verify(bytes.NewReader(file), head)
		if err != nil {
			t.Fatal(err)
		}
		if res.Problem == nil || res.Problem.Error() != want {
			t.Fatalf("got %v\nwant %s", res.Problem, want)
		}
	}
	check(joinLines(slices.Delete(slices.Clone(ls), 4, 7)), "",
		"events.jsonl line 5: deleted: 3 lines missing before this line (seqs 5-7): seq 8 follows seq 4 and prev matches no line")
	check(joinLines(ls[:7]), seqHead,
		"events.jsonl line 8: truncated: 3 lines missing at the end: the log ends at seq 7, the expected head is seq 10")
	check(joinLines(slices.Insert(slices.Clone(ls), 6, ls[2])), "",
		"events.jsonl line 7: inserted: a copy of line 3: line 8 continues from line 6")
	check(joinLines(slices.Insert(slices.Clone(ls), 6, forge(7, lineHash(ls[1]), "a"), forge(8, lineHash(ls[1]), "b"))), "",
		"events.jsonl line 7: inserted: 2 lines not in the chain: line 9 continues from line 6")
	sw := slices.Clone(ls)
	sw[4], sw[5] = sw[5], sw[4]
	check(joinLines(sw), "",
		"events.jsonl line 5: reordered: lines 5 and 6 are swapped: seq 6 comes before seq 5")
}

func TestVerifyBadSeqWrittenSo(t *testing.T) {
	// A chain that is intact by hash but skips seq 4: written that way,
	// so it is bad_seq, not deleted or modified.
	var ls [][]byte
	var prev [32]byte
	for _, seq := range []int64{1, 2, 3, 5, 6} {
		l := forge(seq, prev, "x")
		ls = append(ls, l)
		prev = lineHash(l)
	}
	for _, head := range []string{"", FormatHead(6, lineHashHex(ls[4]))} {
		res, err := Verify(bytes.NewReader(joinLines(ls)), head)
		if err != nil {
			t.Fatal(err)
		}
		if p := res.Problem; p == nil || p.Line != 4 || p.Kind != KindBadSeq {
			t.Fatalf("head %q: got %v, want bad_seq at line 4", head, p)
		}
	}
	// The same seq skip on the last line, vouched for by the head.
	res, _ := Verify(bytes.NewReader(joinLines(ls[:4])), lineHashHex(ls[3]))
	if p := res.Problem; p == nil || p.Line != 4 || p.Kind != KindBadSeq {
		t.Fatalf("got %v, want bad_seq at line 4", p)
	}
}

func TestVerifyEmpty(t *testing.T) {
	_, _, someHead := writeLog(t, 3)
	tests := []struct {
		head     string
		wantKind string
	}{
		{"", ""},
		{Genesis, ""}, // what Writer.Head reports before the first line
		{FormatHead(0, Genesis), ""},
		{someHead, KindTruncated},
		{FormatHead(3, someHead), KindTruncated},
	}
	for _, tc := range tests {
		res, err := Verify(strings.NewReader(""), tc.head)
		if err != nil {
			t.Fatal(err)
		}
		if res.Lines != 0 || res.Head != Genesis {
			t.Fatalf("empty log: lines %d head %s", res.Lines, res.Head)
		}
		switch {
		case tc.wantKind == "" && res.Problem != nil:
			t.Fatalf("head %q: want intact, got %v", tc.head, res.Problem)
		case tc.wantKind != "" && (res.Problem == nil || res.Problem.Kind != tc.wantKind || res.Problem.Line != 1):
			t.Fatalf("head %q: want %s at line 1, got %v", tc.head, tc.wantKind, res.Problem)
		}
	}
}

// TestVerifyExtendedAfterHead: the recorded head is an earlier line, so the
// lines after it were added later.
func TestVerifyExtendedAfterHead(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var head string
	for i := 1; i <= 10; i++ {
		if _, err := w.Append(testEntry(i)); err != nil {
			t.Fatal(err)
		}
		if i == 7 {
			head = FormatHead(w.Head())
		}
	}
	for _, h := range []string{head, head[strings.IndexByte(head, ':')+1:]} {
		res, err := Verify(bytes.NewReader(buf.Bytes()), h)
		if err != nil {
			t.Fatal(err)
		}
		if p := res.Problem; p == nil || p.Line != 8 || p.Kind != KindInserted {
			t.Fatalf("got %v, want inserted at line 8", p)
		}
	}
	// An empty-log head with lines present: everything was added.
	res, _ := Verify(bytes.NewReader(buf.Bytes()), Genesis)
	if p := res.Problem; p == nil || p.Line != 1 || p.Kind != KindInserted {
		t.Fatalf("got %v, want inserted at line 1", p)
	}
}

func TestVerifyResult(t *testing.T) {
	raw, seqHead, hashHead := writeLog(t, 5)
	res, err := Verify(bytes.NewReader(raw), seqHead)
	if err != nil || res.Problem != nil || res.Lines != 5 || res.Head != hashHead {
		t.Fatalf("got %+v, %v", res, err)
	}
}

func TestVerifyBadExpectHead(t *testing.T) {
	for _, h := range []string{"xyz", "12:xyz", "-1:" + Genesis, Genesis + "0", "a:" + Genesis} {
		if _, err := Verify(strings.NewReader(""), h); err == nil {
			t.Errorf("expect head %q: no error", h)
		}
	}
}

type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, os.ErrDeadlineExceeded
	}
	r.n--
	return copy(p, "{\"seq\":1}\n"), nil
}

func TestVerifyReadError(t *testing.T) {
	_, err := Verify(&failingReader{n: 2}, "")
	if err == nil {
		t.Fatal("want read error")
	}
	if _, err := VerifyFile(filepath.Join(t.TempDir(), "missing"), ""); err == nil {
		t.Fatal("want open error")
	}
}

func TestVerifyTooLongLine(t *testing.T) {
	raw, _, _ := writeLog(t, 2)
	long := append(bytes.Repeat([]byte("a"), MaxLineSize+10), '\n')
	res, err := Verify(bytes.NewReader(append(raw, long...)), "")
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Problem; p == nil || p.Line != 3 || p.Kind != KindMalformed {
		t.Fatalf("got %v, want malformed at line 3", p)
	}
	if res.Head != lineHashHex(long[:len(long)-1]) {
		t.Fatal("head of a too-long line is not its hash")
	}
}

func TestProblemError(t *testing.T) {
	p := Problem{Line: 17, Kind: KindModified, Detail: "x"}
	if got := p.Error(); got != "events.jsonl line 17: modified: x" {
		t.Fatal(got)
	}
}

// TestEveryByteFlip is the flip property of FuzzTamper made exhaustive on a
// small log: every byte, several bit patterns, always detected and named at
// the line holding the byte.
func TestEveryByteFlip(t *testing.T) {
	raw, seqHead, hashHead := writeLog(t, 4)
	for i := range raw {
		line := bytes.Count(raw[:i], []byte("\n")) + 1
		for _, x := range []byte{0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff} {
			file := bytes.Clone(raw)
			file[i] ^= x
			res, err := Verify(bytes.NewReader(file), seqHead)
			if err != nil {
				t.Fatal(err)
			}
			p := res.Problem
			if p == nil || p.Line != line || !slices.Contains([]string{KindModified, KindMalformed, KindTruncated}, p.Kind) {
				t.Fatalf("byte %d ^ %#x (line %d): got %v", i, x, line, p)
			}
			if res, _ := Verify(bytes.NewReader(file), hashHead); res.Problem == nil {
				t.Fatalf("byte %d ^ %#x undetected with a bare hash head", i, x)
			}
		}
	}
}

// TestVerifyLongLog crosses the verifier's hash blocks (4096 lines each):
// looking back into an earlier block must find the right line.
func TestVerifyLongLog(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := 1; i <= 9000; i++ {
		if _, err := w.Append(testEntry(i)); err != nil {
			t.Fatal(err)
		}
	}
	head := FormatHead(w.Head())
	ls := splitLines(buf.Bytes())
	res, err := Verify(bytes.NewReader(buf.Bytes()), head)
	if err != nil || res.Problem != nil || res.Lines != 9000 {
		t.Fatalf("intact: %+v %v", res, err)
	}
	dup := joinLines(slices.Insert(slices.Clone(ls), 8000, ls[4100]))
	res, _ = Verify(bytes.NewReader(dup), head)
	if p := res.Problem; p == nil || p.Line != 8001 || p.Kind != KindInserted || !strings.Contains(p.Detail, "copy of line 4101") {
		t.Fatalf("dup: %v", p)
	}
	fork := joinLines(slices.Insert(slices.Clone(ls), 4096, forge(4097, lineHash(ls[4095]), "x")))
	res, _ = Verify(bytes.NewReader(fork), head)
	if p := res.Problem; p == nil || p.Line != 4097 || p.Kind != KindInserted {
		t.Fatalf("fork: %v", p)
	}
}
