package eventlog

import (
	"bufio"
	"fmt"
	"os"
)

// ReadFile calls each with every entry of the log at path, in order, with its
// line number. It parses as the verifier does (the entries come back as the
// writer was given them, numbers in Data as json.Number) but checks no hash:
// verify first where that matters.
func ReadFile(path string, each func(line int, e Entry) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), MaxLineSize)
	for n := 1; sc.Scan(); n++ {
		p, err := parseLine(sc.Bytes())
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		e, err := p.entry()
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if err := each(n, e); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
