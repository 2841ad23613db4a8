package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// refIntact is a deliberately naive restatement of "intact" (for an unknown
// head): every line ends with a newline, parses, and chains from Genesis.
func refIntact(data []byte) bool {
	if len(data) == 0 {
		return true
	}
	if data[len(data)-1] != '\n' {
		return false
	}
	var prev [32]byte
	for i, l := range bytes.Split(data[:len(data)-1], []byte("\n")) {
		p, err := parseLine(l)
		if err != nil || len(l) > MaxLineSize || p.seq != int64(i+1) || p.prev != prev {
			return false
		}
		prev = lineHash(l)
	}
	return true
}

var validKinds = map[string]bool{KindModified: true, KindDeleted: true, KindInserted: true, KindReordered: true,
	KindTruncated: true, KindMalformed: true, KindBadSeq: true}

// FuzzVerify: arbitrary bytes never panic or error, a reported problem is
// within the file, and "intact" agrees with the naive definition.
func FuzzVerify(f *testing.F) {
	for _, n := range []int{0, 1, 3} {
		raw, _, _ := writeLog(f, n)
		f.Add(raw)
		if n > 0 {
			ls := splitLines(raw)
			f.Add(joinLines(slices.Insert(slices.Clone(ls), 0, ls[len(ls)-1])))
			f.Add(raw[:len(raw)-5])
		}
	}
	f.Add([]byte("{\"seq\":1}\n\n\r\n"))
	f.Add([]byte(`{"seq":1,"prev":"` + Genesis + `","time":"2025-01-02T03:04:05.000000000Z","source":"rig","event":"e","case":"\u00e9\\","data":{"a":[1,{"b":null}]}}` + "\n"))
	_, _, someHead := writeLog(f, 2)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, head := range []string{"", Genesis, someHead, FormatHead(2, someHead)} {
			res, err := Verify(bytes.NewReader(data), head)
			if err != nil {
				t.Fatal(err)
			}
			if p := res.Problem; p != nil {
				if !validKinds[p.Kind] || p.Line < 1 || p.Line > res.Lines+1 || p.Detail == "" {
					t.Fatalf("bad problem %+v (lines %d)", p, res.Lines)
				}
			}
			if head == "" && (res.Problem == nil) != refIntact(data) {
				t.Fatalf("Verify says %v, reference says intact=%v", res.Problem, refIntact(data))
			}
		}
	})
}

// FuzzTamper: on a valid log and its seq:hash head, one edit — flip any
// byte, delete, swap or duplicate a line, insert a forged line, cut the file
// anywhere — is always detected, and named at the line it touched. With a
// bare hash head it is still always detected.
func FuzzTamper(f *testing.F) {
	for op := range uint8(6) {
		f.Add(uint8(9), op, uint32(0), byte(1))
		f.Add(uint8(9), op, uint32(2500), byte(0x20))
		f.Add(uint8(0), op, uint32(77), byte(0x80))
	}
	logs := map[int][]byte{}
	heads := map[int][2]string{}
	f.Fuzz(func(t *testing.T, nn uint8, op uint8, pos uint32, x byte) {
		n := 1 + int(nn)%12
		if logs[n] == nil {
			raw, sh, hh := writeLog(t, n)
			logs[n], heads[n] = raw, [2]string{sh, hh}
		}
		raw := logs[n]
		ls := splitLines(raw)
		var file []byte
		var wantLine int
		var wantKinds []string
		switch op % 6 {
		case 0: // flip a byte
			if x == 0 {
				x = 1
			}
			i := int(pos % uint32(len(raw)))
			file = bytes.Clone(raw)
			file[i] ^= x
			wantLine = bytes.Count(raw[:i], []byte("\n")) + 1
			wantKinds = []string{KindModified, KindMalformed, KindTruncated}
		case 1: // delete a line
			k := int(pos%uint32(n)) + 1
			file = joinLines(slices.Delete(slices.Clone(ls), k-1, k))
			wantLine, wantKinds = k, []string{KindDeleted}
			if k == n {
				wantKinds = []string{KindTruncated}
			}
		case 2: // swap neighbours
			if n < 2 {
				return
			}
			k := int(pos%uint32(n-1)) + 1
			s := slices.Clone(ls)
			s[k-1], s[k] = s[k], s[k-1]
			file = joinLines(s)
			wantLine, wantKinds = k, []string{KindReordered}
		case 3: // duplicate a line in place
			k := int(pos%uint32(n)) + 1
			file = joinLines(slices.Insert(slices.Clone(ls), k, ls[k-1]))
			wantLine, wantKinds = k+1, []string{KindInserted}
		case 5: // insert a forged line as line k, chained or not
			k := int(pos%uint32(n+1)) + 1
			var prev [32]byte
			if k > 1 {
				prev = lineHash(ls[k-2])
			}
			seq := int64(k)
			switch x % 4 {
			case 1: // wrong prev
				prev = sha256.Sum256([]byte{x})
			case 2: // wrong seq
				seq += int64(x)
			case 3: // both
				prev, seq = sha256.Sum256([]byte{x}), int64(x)+1
			}
			file = joinLines(slices.Insert(slices.Clone(ls), k-1, forge(seq, prev, fmt.Sprint(x))))
			wantLine, wantKinds = k, []string{KindInserted}
		case 4: // cut the file anywhere
			c := int(pos % uint32(len(raw)))
			file = raw[:c]
			wantLine, wantKinds = bytes.Count(file, []byte("\n"))+1, []string{KindTruncated}
		}
		res, err := Verify(bytes.NewReader(file), heads[n][0])
		if err != nil {
			t.Fatal(err)
		}
		p := res.Problem
		if p == nil {
			t.Fatalf("op %d undetected", op%6)
		}
		if p.Line != wantLine || !slices.Contains(wantKinds, p.Kind) {
			t.Fatalf("op %d: got %v, want line %d kind %v", op%6, p, wantLine, wantKinds)
		}
		if res, _ := Verify(bytes.NewReader(file), heads[n][1]); res.Problem == nil {
			t.Fatalf("op %d undetected with a bare hash head", op%6)
		}
	})
}

// FuzzJSONString: the line parser's string scanner accepts exactly the JSON
// strings encoding/json accepts, so a case or correlation_id the writer
// produced always parses and nothing else slips through.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{`"a"`, `"\u00e9\\\/\b\f\n\r\t"`, `"\ud800"`, `"\x"`, `"\u12"`, "\"\x01\"", `"a"b`, `"`, `"\"`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, rest, ok := jsonString(b)
		if ok && (!json.Valid(s) || len(s)+len(rest) != len(b)) {
			t.Fatalf("jsonString accepted %q, json.Valid does not", s)
		}
		// (json.Valid allows whitespace around the value; the line format
		// does not, so only a string ending in its quote must match.)
		if len(b) > 1 && b[0] == '"' && b[len(b)-1] == '"' && json.Valid(b) && (!ok || len(rest) != 0) {
			t.Fatalf("json.Valid accepts %q, jsonString does not", b)
		}
	})
}
