package markers

import (
	"fmt"
	"unicode/utf8"
)

// MaxIDLen is the longest id accepted by [ValidID].
const MaxIDLen = 128

const idCharsHint = "(use A-Z a-z 0-9 . _ : -, starting with a letter or digit)"

// ValidID reports whether s can be used as a marker id: 1 to [MaxIDLen]
// characters of [A-Za-z0-9._:-], the first a letter or digit. The rule is
// narrow on purpose: such an id never needs shell quoting, never contains the
// ledger's field separator, and can never be mistaken for an option.
func ValidID(s string) error {
	if problem := idProblem(s); problem != "" {
		return fmt.Errorf("markers: id %s: %s", quoteForMessage(s), problem)
	}
	return nil
}

// idProblem describes what is wrong with s as an id, or returns "" if
// nothing is. It is shared by ValidID and the ledger parser, which prefix it
// differently.
func idProblem(s string) string {
	if s == "" {
		return "empty " + idCharsHint
	}
	if len(s) > MaxIDLen {
		return fmt.Sprintf("%d characters, longer than %d", len(s), MaxIDLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		allowed := isAlnum(c) || (i > 0 && (c == '.' || c == '_' || c == ':' || c == '-'))
		if !allowed {
			return fmt.Sprintf("character %s at %d not allowed %s", describeCharAt(s, i), i, idCharsHint)
		}
	}
	return ""
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// describeCharAt shows the character starting at byte i of s the way Go
// quotes a rune, or as a \x escape if it is not valid UTF-8, so that the
// message shows exactly which byte was rejected.
func describeCharAt(s string, i int) string {
	r, size := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf(`'\x%02x'`, s[i])
	}
	return fmt.Sprintf("%q", r)
}

// quoteForMessage quotes s for an error message, cutting it short so that a
// huge bogus value cannot produce a huge error.
func quoteForMessage(s string) string {
	const limit = 80
	if len(s) <= limit {
		return fmt.Sprintf("%q", s)
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q...", s[:cut])
}
