package secret

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"os"
	"strings"
)

// Secret is something that must never appear in what the tool printed.
type Secret struct {
	Name string // e.g. "private key (PEM)"
	Data []byte
	// ResultOnly: only its appearance on stdout (the result the agent reads)
	// is a leak, e.g. the identity file's path, which diagnostics may name.
	ResultOnly bool
}

// minLine is the shortest base64 line of a key body treated as a secret on
// its own: any full line that long is unique to the key, a shorter tail line
// could match ordinary text.
const minLine = 40

// OfKeyFile returns every form of the private key in path that a program
// might print: the PEM text, its JSON-escaped form (a program that prints
// JSON escapes the newlines), the base64 body joined and each full line of it.
func OfKeyFile(path string) ([]Secret, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pemText := bytes.TrimSpace(raw)
	secrets := []Secret{{Name: "private key (PEM)", Data: pemText}}
	if quoted, err := json.Marshal(string(pemText)); err == nil {
		secrets = append(secrets, Secret{Name: "private key (PEM, JSON-escaped)", Data: quoted[1 : len(quoted)-1]})
	}
	if block, _ := pem.Decode(raw); block == nil {
		return secrets, nil
	}
	var body []string
	inBody := false
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "-----BEGIN"):
			inBody = true
		case strings.HasPrefix(line, "-----END"):
			inBody = false
		case inBody && line != "":
			body = append(body, line)
		}
	}
	if len(body) > 0 {
		secrets = append(secrets, Secret{Name: "private key (base64 body)", Data: []byte(strings.Join(body, ""))})
		for _, line := range body {
			if len(line) >= minLine {
				secrets = append(secrets, Secret{Name: "private key (a base64 line)", Data: []byte(line)})
			}
		}
	}
	return secrets, nil
}

// WithPath is OfKeyFile plus the key file's path, as a secret of results
// only: on the stdout an agent reads, a path to a readable key exposes the
// key, while in a transcript the path is ordinary.
func WithPath(path string) ([]Secret, error) {
	s, err := OfKeyFile(path)
	if err != nil {
		return nil, err
	}
	return append(s, Secret{Name: "identity file's path", Data: []byte(path), ResultOnly: true}), nil
}

// Redact replaces every secret in b with a marker naming it, and then every
// fragment of key material: a run of at least MinFragment base64 characters
// that occurs inside a secret, as text cut at a buffer's edge or quoted short
// in an error message leaves it. The marker has no quote or backslash, so
// redacting a JSON document keeps it valid JSON.
func Redact(b []byte, secrets []Secret) []byte {
	for _, s := range secrets {
		if len(s.Data) > 0 && bytes.Contains(b, s.Data) {
			b = bytes.ReplaceAll(b, s.Data, []byte("[REDACTED: "+s.Name+"]"))
		}
	}
	return redactFragments(b, secrets)
}

// MinFragment is the shortest run of base64 characters Redact treats as a
// fragment of a key. Shorter runs occur in ordinary text by chance.
const MinFragment = 24

func isBase64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}

// redactFragments replaces each run of base64 characters that is a fragment
// of a key secret (not a ResultOnly one, such as a path).
func redactFragments(b []byte, secrets []Secret) []byte {
	isFragment := func(tok []byte) (string, bool) {
		for _, s := range secrets {
			if !s.ResultOnly && len(s.Data) >= MinFragment && bytes.Contains(s.Data, tok) {
				return s.Name, true
			}
		}
		return "", false
	}
	var out []byte
	last := 0 // b[last:] is not yet in out
	for i := 0; i < len(b); {
		if !isBase64(b[i]) {
			i++
			continue
		}
		j := i
		for j < len(b) && isBase64(b[j]) {
			j++
		}
		start := i
		// In JSON text a line break is the two characters \n, and the n
		// joins the run that follows.
		if i > 0 && b[i-1] == '\\' && j-i > MinFragment {
			start = i + 1
		}
		if j-start >= MinFragment {
			if name, ok := isFragment(b[start:j]); ok {
				out = append(out, b[last:start]...)
				out = append(out, "[REDACTED: part of the "+name+"]"...)
				last = j
			}
		}
		i = j
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// ForJSON adds the JSON-escaped form of each secret whose escaping differs
// from it, for redacting text that is already JSON.
func ForJSON(secrets []Secret) []Secret {
	out := append([]Secret(nil), secrets...)
	for _, s := range secrets {
		if q, err := json.Marshal(string(s.Data)); err == nil && len(q) > 2 && string(q[1:len(q)-1]) != string(s.Data) {
			out = append(out, Secret{Name: s.Name, Data: q[1 : len(q)-1]})
		}
	}
	return out
}

// Found names the secrets that occur in b, once each.
func Found(b []byte, secrets []Secret) []string {
	var names []string
	seen := map[string]bool{}
	for _, s := range secrets {
		if len(s.Data) > 0 && !seen[s.Name] && bytes.Contains(b, s.Data) {
			seen[s.Name] = true
			names = append(names, s.Name)
		}
	}
	return names
}
