package eventlog

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"
	"strings"
)

// Problem is the first thing wrong with a log. Line is the 1-based line of
// the file it is about; for a cut tail it is the first line that is missing.
type Problem struct {
	Line   int
	Kind   string // one of the Kind constants
	Detail string
}

func (p Problem) Error() string {
	return fmt.Sprintf("%s line %d: %s: %s", FileName, p.Line, p.Kind, p.Detail)
}

// Result is what Verify found. Lines counts the lines read (a final line
// without its newline included); Head is the hash of the last line, or
// Genesis for an empty input. Problem is nil when the log is intact.
type Result struct {
	Lines   int
	Head    string
	Problem *Problem
}

// VerifyFile is Verify on the file at path.
func VerifyFile(path, expectHead string) (Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return Result{}, fmt.Errorf("eventlog: %w", err)
	}
	defer f.Close()
	return Verify(f, expectHead)
}

// Verify checks the log read from r and names its first problem (see the
// package documentation for the rules). expectHead is the head recorded when
// the log was written: "" when unknown, a bare hex hash, or "seq:hash" as
// made by FormatHead. The error is non-nil only when r fails or expectHead
// itself cannot be parsed; a damaged log is a Problem, not an error.
func Verify(r io.Reader, expectHead string) (Result, error) {
	exp, err := parseExpectHead(expectHead)
	if err != nil {
		return Result{}, err
	}
	v := verifier{exp: exp}
	lr := lineReader{br: bufio.NewReaderSize(r, 64<<10)}
	for {
		ln, more, err := lr.next()
		if err != nil {
			return v.result(nil), fmt.Errorf("eventlog: read line %d: %w", v.lines+1, err)
		}
		if !more {
			break
		}
		v.add(ln)
	}
	if v.tail == nil {
		return v.result(v.checkHead()), nil
	}
	return v.result(v.classify()), nil
}

type expectation struct {
	set    bool
	hasSeq bool
	seq    int64
	hash   [32]byte
}

func parseExpectHead(s string) (expectation, error) {
	var e expectation
	if s == "" {
		return e, nil
	}
	h := s
	if i := strings.IndexByte(s, ':'); i >= 0 {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n < 0 {
			return e, fmt.Errorf("eventlog: expected head %q: bad seq", s)
		}
		e.hasSeq, e.seq, h = true, n, s[i+1:]
	}
	if len(h) != 64 {
		return e, fmt.Errorf("eventlog: expected head %q: not a 64-digit hex hash", s)
	}
	if _, err := hex.Decode(e.hash[:], []byte(h)); err != nil {
		return e, fmt.Errorf("eventlog: expected head %q: %w", s, err)
	}
	e.set = true
	return e, nil
}

// record is what classification needs of a line past the intact prefix.
type record struct {
	seq      int64
	prev     [32]byte
	hash     [32]byte
	ok       bool // parsed; seq and prev are meaningful
	complete bool // ended with a newline
	detail   string
}

// verifier streams the log. Lines that chain from Genesis form the intact
// prefix, of which only the hashes are kept (32 bytes a line; seq and prev
// follow from position). From the first line that does not chain, every
// line is kept as a record, because naming the problem may need to look
// ahead (is the missing line further down? does the next line chain to
// this one?).
type verifier struct {
	exp    expectation
	prefix hashList
	tail   []record
	lines  int
	last   [32]byte
	expAt  int // first line whose hash is exp.hash; 0 when none
}

func (v *verifier) add(ln line) {
	v.lines++
	v.last = ln.hash
	if v.exp.set && v.expAt == 0 && ln.hash == v.exp.hash {
		v.expAt = v.lines
	}
	rec := record{hash: ln.hash, complete: ln.complete}
	if ln.tooLong {
		rec.detail = fmt.Sprintf("line is longer than %d bytes", MaxLineSize)
	} else if p, err := parseLine(ln.b); err != nil {
		rec.detail = err.Error()
	} else {
		rec.ok, rec.seq, rec.prev = true, p.seq, p.prev
	}
	if v.tail == nil && rec.ok && rec.complete &&
		rec.seq == int64(v.prefix.n)+1 && rec.prev == v.hashAt(v.prefix.n) {
		v.prefix.add(ln.hash)
		return
	}
	v.tail = append(v.tail, rec)
}

func (v *verifier) result(p *Problem) Result {
	return Result{Lines: v.lines, Head: hex.EncodeToString(v.last[:]), Problem: p}
}

// hashAt is the hash of line j, Genesis (all zero bytes) for j == 0.
func (v *verifier) hashAt(j int) [32]byte {
	if j == 0 {
		return [32]byte{}
	}
	if j <= v.prefix.n {
		return v.prefix.at(j - 1)
	}
	return v.tail[j-v.prefix.n-1].hash
}

// hashList holds the prefix's hashes in blocks of hashBlock: a million-line
// log needs 32 MB, and one growing slice would copy that over and over. Only
// the first block grows from small, so a short log costs little.
type hashList struct {
	blocks [][][32]byte
	n      int
}

const hashBlock = 4096

func (l *hashList) add(h [32]byte) {
	if l.n%hashBlock == 0 {
		var blk [][32]byte
		if l.n > 0 {
			blk = make([][32]byte, 0, hashBlock)
		}
		l.blocks = append(l.blocks, blk)
	}
	last := &l.blocks[len(l.blocks)-1]
	*last = append(*last, h)
	l.n++
}

func (l *hashList) at(i int) [32]byte { return l.blocks[i/hashBlock][i%hashBlock] }

// rec is line j as a record; prefix lines are rebuilt from their position.
func (v *verifier) rec(j int) record {
	if j <= v.prefix.n {
		return record{seq: int64(j), prev: v.hashAt(j - 1), hash: v.prefix.at(j - 1), ok: true, complete: true}
	}
	return v.tail[j-v.prefix.n-1]
}

// follower is the first line from `from` on that is the true successor of a
// line with hash h and seq s, 0 when none.
func (v *verifier) follower(from int, h [32]byte, s int64) int {
	for j := from; j <= v.lines; j++ {
		if r := v.rec(j); r.ok && r.prev == h && r.seq == s+1 {
			return j
		}
	}
	return 0
}

// lineWithHash is the first line from `from` on whose hash is h, 0 when none.
func (v *verifier) lineWithHash(from int, h [32]byte) int {
	for j := from; j <= v.lines; j++ {
		if v.hashAt(j) == h {
			return j
		}
	}
	return 0
}

// lineName names line j, or the genesis value for j == 0.
func lineName(j int) string {
	if j == 0 {
		return "the genesis value"
	}
	return "line " + strconv.Itoa(j)
}

// span is "seq 5" or "seqs 5-7".
func span(word string, a, b int64) string {
	if a == b {
		return fmt.Sprintf("%s %d", word, a)
	}
	return fmt.Sprintf("%ss %d-%d", word, a, b)
}

func short(h [32]byte) string { return hex.EncodeToString(h[:6]) }

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func problem(line int, kind, format string, args ...any) *Problem {
	return &Problem{Line: line, Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// checkHead judges a log whose every line chains from Genesis: only the
// expected head can show that lines were cut, added or rewritten at the end.
func (v *verifier) checkHead() *Problem {
	if !v.exp.set {
		return nil
	}
	n := v.lines
	e := v.exp
	if e.hash == v.last {
		if e.hasSeq && e.seq != int64(n) {
			return problem(n, KindBadSeq, "the expected head names seq %d, but its hash is line %d", e.seq, n)
		}
		return nil
	}
	if e.hash == ([32]byte{}) || v.expAt > 0 {
		return v.afterHead(v.expAt)
	}
	if e.hasSeq {
		switch s := e.seq; {
		case s > int64(n):
			return problem(n+1, KindTruncated, "%s missing at the end: the log ends at seq %d, the expected head is seq %d",
				plural(s-int64(n), "line"), n, s)
		case s == int64(n):
			return problem(n, KindModified, "the last line hashes to %s…, the expected head is %s…", short(v.last), short(e.hash))
		case s == 0:
			return problem(1, KindInserted, "the expected head is an empty log, but it has %s", plural(int64(n), "line"))
		default:
			return problem(int(s), KindModified, "line %d hashes to %s…, not the expected head %s…, yet the chain after it is intact: lines %d-%d were rewritten",
				s, short(v.hashAt(int(s))), short(e.hash), s, n)
		}
	}
	if n == 0 {
		return problem(1, KindTruncated, "the log is empty, but the expected head is %s…", short(e.hash))
	}
	return problem(n+1, KindTruncated, "the log ends at line %d, which hashes to %s…; no line hashes to the expected head %s…: lines are missing at the end (or the last line was altered; a seq:hash head tells which)",
		n, short(v.last), short(e.hash))
}

// afterHead reports the lines after the expected head, line j (0 when the
// head is Genesis: nothing had been logged).
func (v *verifier) afterHead(j int) *Problem {
	return problem(j+1, KindInserted, "%s after the expected head (%s): %s added after the head was recorded",
		plural(int64(v.lines-j), "line"), lineName(j), span("line", int64(j+1), int64(v.lines)))
}

// classify names the problem at the first line that does not chain. Line
// i-1 (A) is trusted as far as the chain goes; line i (B) is not its
// successor. The checks run from the most specific pattern to the least.
func (v *verifier) classify() *Problem {
	i := v.prefix.n + 1
	b := v.tail[0]
	if p := v.unreadable(i, b); p != nil {
		return p
	}
	aHash, aSeq := v.hashAt(i-1), int64(i-1)
	prevOK := b.prev == aHash
	seqOK := b.seq == aSeq+1
	var c *record // line i+1 when it parsed
	if len(v.tail) > 1 && v.tail[1].ok {
		c = &v.tail[1]
	}
	isLast := len(v.tail) == 1

	if p := v.displaced(i, b, aHash, aSeq); p != nil {
		return p
	}
	if !prevOK {
		if p := v.foreignPrev(i, b, aSeq); p != nil {
			return p
		}
	}
	return v.unlinked(i, b, c, isLast, aSeq, seqOK, prevOK)
}

// unreadable applies rules 0-2 (lines after the expected head, B cut
// short, B malformed) to line i, B; nil when none applies.
func (v *verifier) unreadable(i int, b record) *Problem {
	// The expected head is an accepted line (or Genesis): whatever follows
	// it was added after the head was recorded, and that comes first.
	if e := v.exp; e.set && (e.hash == ([32]byte{}) || v.expAt > 0 && v.expAt < i) {
		return v.afterHead(v.expAt)
	}
	if !b.complete {
		if b.ok {
			return problem(i, KindTruncated, "the last line has no newline: the log was cut at its end")
		}
		return problem(i, KindTruncated, "the last line is incomplete (%s, no newline): the log was cut in the middle of it", b.detail)
	}
	if !b.ok {
		return problem(i, KindMalformed, "%s", b.detail)
	}
	return nil
}

// displaced applies rule 3 (A, with hash aHash and seq aSeq, has its true
// successor further down) to line i, B; nil when it does not apply.
func (v *verifier) displaced(i int, b record, aHash [32]byte, aSeq int64) *Problem {
	// A's true successor is further down: B does not belong here. If B's
	// own predecessor is further down as well, B was moved; otherwise it
	// (and anything up to the successor) was added.
	m := v.follower(i+1, aHash, aSeq)
	if m <= 0 {
		return nil
	}
	if x := v.predecessor(i+1, b); x > 0 {
		if x == i+1 && m == i+1 {
			return problem(i, KindReordered, "lines %d and %d are swapped: seq %d comes before seq %d", i, i+1, b.seq, v.rec(m).seq)
		}
		return problem(i, KindReordered, "line %d (seq %d) is out of place: it continues from line %d, and seq %d (which continues from %s) is at line %d",
			i, b.seq, x, aSeq+1, lineName(i-1), m)
	}
	if m == i+1 && b.seq >= 1 && b.seq <= aSeq && v.prefix.at(int(b.seq)-1) == b.hash {
		return problem(i, KindInserted, "a copy of line %d: line %d continues from %s", b.seq, m, lineName(i-1))
	}
	return problem(i, KindInserted, "%s not in the chain: line %d continues from %s", plural(int64(m-i), "line"), m, lineName(i-1))
}

// foreignPrev applies rules 4-7 (B's prev, not A's hash, points at another
// line or Genesis) to line i, B; nil when none applies.
func (v *verifier) foreignPrev(i int, b record, aSeq int64) *Problem {
	// B's prev may point at another line of the file; then B is a
	// copy, a fork, or a line from elsewhere, not the successor of a
	// modified A or of deleted lines (their hashes are nowhere).
	if j := int(b.seq); b.seq <= aSeq {
		if v.prefix.at(j-1) == b.hash {
			return problem(i, KindInserted, "a copy of line %d", j)
		}
		if b.prev == v.hashAt(j-1) {
			// B is line j-1's successor too: the chain forks at
			// line j-1, and the earlier branch (lines j..i-1,
			// which chain correctly) was added before the
			// original continuation.
			return problem(j, KindInserted, "%s (%s) not in the original chain: line %d (seq %d) also continues from %s",
				plural(int64(i-j), "line"), span("line", int64(j), int64(i-1)), i, b.seq, lineName(j-1))
		}
	}
	if x := v.predecessor(i+1, b); x > 0 {
		return problem(i, KindReordered, "line %d (seq %d) is out of place: it continues from line %d", i, b.seq, x)
	}
	if b.prev == ([32]byte{}) {
		return problem(i, KindInserted, "prev is the genesis value, but this is not line 1")
	}
	if x := v.lineWithHash(1, b.prev); x > 0 {
		return problem(i, KindInserted, "prev points at line %d, not at %s", x, lineName(i-1))
	}
	return nil
}

// unlinked applies rules 8-11 (B's prev is A's hash but its seq is wrong,
// or its prev matches no line) to line i, B; c is line i+1 when it parsed.
func (v *verifier) unlinked(i int, b record, c *record, isLast bool, aSeq int64, seqOK, prevOK bool) *Problem {
	switch {
	case seqOK:
		// B's prev matches no line. Either A was altered (its hash
		// changed) or B's prev was. The line after B, or the expected
		// head when B is last, tells which: if it vouches for B, B is as
		// written.
		switch {
		case c != nil && c.prev == b.hash, isLast && v.exp.set && v.exp.hash == b.hash:
			return v.altered(i-1, "line %d's prev does not match it, but line %d is intact", i, i)
		case c != nil, isLast && v.exp.set:
			return problem(i, KindModified, "prev does not match %s, and the next line (or the expected head) does not match this one", lineName(i-1))
		default:
			return v.altered(i-1, "line %d's prev does not match it (or line %d's prev was altered; nothing after it tells which)", i, i)
		}
	case prevOK:
		// B chains by hash but carries the wrong seq. If what follows
		// still vouches for B, it was written so; if not, B was altered.
		switch {
		case c != nil && c.prev == b.hash, isLast && v.exp.set && v.exp.hash == b.hash:
			return problem(i, KindBadSeq, "seq %d after seq %d, though the line chains by hash (written this way)", b.seq, aSeq)
		case c != nil, isLast && v.exp.set:
			return problem(i, KindModified, "seq %d after seq %d, and the next line (or the expected head) does not match this one", b.seq, aSeq)
		default:
			return problem(i, KindBadSeq, "seq %d after seq %d", b.seq, aSeq)
		}
	case b.seq > aSeq+1:
		return problem(i, KindDeleted, "%s missing before this line (%s): seq %d follows seq %d and prev matches no line",
			plural(b.seq-aSeq-1, "line"), span("seq", aSeq+1, b.seq-1), b.seq, aSeq)
	default:
		return problem(i, KindInserted, "seq %d after seq %d, and prev matches no line", b.seq, aSeq)
	}
}

// predecessor is the first line from `from` on that b continues from (by
// hash and seq), 0 when none.
func (v *verifier) predecessor(from int, b record) int {
	for j := from; j <= v.lines; j++ {
		if r := v.rec(j); r.ok && r.hash == b.prev && r.seq == b.seq-1 {
			return j
		}
	}
	return 0
}

// altered reports line k as modified; k == 0 means B is line 1 and is
// intact, so the log does not start from Genesis.
func (v *verifier) altered(k int, format string, args ...any) *Problem {
	if k == 0 {
		return problem(1, KindModified, "line 1's prev is not the genesis value")
	}
	return problem(k, KindModified, "line %d was altered: "+format, append([]any{k}, args...)...)
}

// line is one line of input without its newline. b is valid until the next
// call to next; a too-long line has no bytes, only its hash.
type line struct {
	b        []byte
	hash     [32]byte
	complete bool
	tooLong  bool
}

type lineReader struct {
	br  *bufio.Reader
	buf []byte
}

// next reads one line; more is false at the end of the input.
func (lr *lineReader) next() (ln line, more bool, err error) {
	lr.buf = lr.buf[:0]
	var hs hash.Hash // set once the line exceeds MaxLineSize
	size := 0
	for {
		chunk, rerr := lr.br.ReadSlice('\n')
		complete := rerr == nil
		if complete {
			chunk = chunk[:len(chunk)-1]
		}
		size += len(chunk)
		switch {
		case hs != nil:
			hs.Write(chunk)
		case size > MaxLineSize:
			hs = sha256.New()
			hs.Write(lr.buf)
			hs.Write(chunk)
			lr.buf = lr.buf[:0]
		case complete && size == len(chunk):
			// The whole line is in bufio's buffer: no copy.
			return line{b: chunk, hash: sha256.Sum256(chunk), complete: true}, true, nil
		default:
			lr.buf = append(lr.buf, chunk...)
		}
		if errors.Is(rerr, bufio.ErrBufferFull) {
			continue
		}
		if rerr != nil && rerr != io.EOF {
			return line{}, false, rerr
		}
		if !complete && size == 0 {
			return line{}, false, nil
		}
		ln = line{complete: complete}
		if hs != nil {
			hs.Sum(ln.hash[:0])
			ln.tooLong = true
		} else {
			ln.b = lr.buf
			ln.hash = sha256.Sum256(lr.buf)
		}
		return ln, true, nil
	}
}
