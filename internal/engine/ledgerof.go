package engine

import (
	"bufio"
	"bytes"
	"context"
	"io"
)

// readLedgerOf reads, out of band, the ledger's lines that mention id (all
// of it for id ""): with the endpoint's ReadLedgerOf, else its whole
// ReadLedger filtered. It returns nil, nil when the endpoint has no
// out-of-band reading.
func (e *Env) readLedgerOf(ctx context.Context, id string) ([]byte, error) {
	if read := e.ep.ReadLedgerOf; read != nil && id != "" {
		return read(ctx, id)
	}
	if e.ep.ReadLedger == nil {
		return nil, nil
	}
	raw, err := e.ep.ReadLedger(ctx)
	if err != nil || id == "" {
		return raw, err
	}
	return linesOf(bytes.NewReader(raw), id)
}

// linesOf keeps the lines of r that contain id followed by a space, as every
// marker line of id does ("<id> start …"), each with its newline; the parser
// then keeps those whose id field is id. Lines longer than a ledger line may
// be are passed over whole, as the parser would reject them anyway.
func linesOf(r io.Reader, id string) ([]byte, error) {
	want := []byte(id + " ")
	br := bufio.NewReaderSize(r, 64<<10)
	out := []byte{} // read, even if empty
	for {
		line, err := br.ReadSlice('\n')
		for err == bufio.ErrBufferFull { // an overlong line: skip the rest of it
			_, err = br.ReadSlice('\n')
			line = nil
		}
		if bytes.Contains(line, want) {
			out = append(out, line...)
			if line[len(line)-1] != '\n' {
				out = append(out, '\n')
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
