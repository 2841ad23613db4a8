package secret

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"os"
	"strings"

	"github.com/sshrig/sshrig/internal/verdict"
)

// minLine is the shortest base64 line of a key body treated as a secret on
// its own: any full line that long is unique to the key, a shorter tail line
// could match ordinary text.
const minLine = 40

// OfKeyFile returns every form of the private key in path that a program
// might print: the PEM text, its JSON-escaped form (a program that prints
// JSON escapes the newlines), the base64 body joined and each full line of it.
func OfKeyFile(path string) ([]verdict.Secret, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pemText := bytes.TrimSpace(raw)
	secrets := []verdict.Secret{{Name: "private key (PEM)", Data: pemText}}
	if quoted, err := json.Marshal(string(pemText)); err == nil {
		secrets = append(secrets, verdict.Secret{Name: "private key (PEM, JSON-escaped)", Data: quoted[1 : len(quoted)-1]})
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
		secrets = append(secrets, verdict.Secret{Name: "private key (base64 body)", Data: []byte(strings.Join(body, ""))})
		for _, line := range body {
			if len(line) >= minLine {
				secrets = append(secrets, verdict.Secret{Name: "private key (a base64 line)", Data: []byte(line)})
			}
		}
	}
	return secrets, nil
}

// WithPath is OfKeyFile plus the key file's path, as a secret of results
// only: on the stdout an agent reads, a path to a readable key exposes the
// key, while in a transcript the path is ordinary.
func WithPath(path string) ([]verdict.Secret, error) {
	s, err := OfKeyFile(path)
	if err != nil {
		return nil, err
	}
	return append(s, verdict.Secret{Name: "identity file's path", Data: []byte(path), ResultOnly: true}), nil
}

// Redact replaces every secret in b with a marker naming it. The marker has
// no quote or backslash, so redacting a JSON document keeps it valid JSON.
func Redact(b []byte, secrets []verdict.Secret) []byte {
	for _, s := range secrets {
		if len(s.Data) > 0 && bytes.Contains(b, s.Data) {
			b = bytes.ReplaceAll(b, s.Data, []byte("[REDACTED: "+s.Name+"]"))
		}
	}
	return b
}

// ForJSON adds the JSON-escaped form of each secret whose escaping differs
// from it, for redacting text that is already JSON.
func ForJSON(secrets []verdict.Secret) []verdict.Secret {
	out := append([]verdict.Secret(nil), secrets...)
	for _, s := range secrets {
		if q, err := json.Marshal(string(s.Data)); err == nil && len(q) > 2 && string(q[1:len(q)-1]) != string(s.Data) {
			out = append(out, verdict.Secret{Name: s.Name, Data: q[1 : len(q)-1]})
		}
	}
	return out
}

// Found names the secrets that occur in b, once each.
func Found(b []byte, secrets []verdict.Secret) []string {
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
