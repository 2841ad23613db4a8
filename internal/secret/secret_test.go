package secret

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func keyFile(t *testing.T) (path string, pemText []byte) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	pemText = pem.EncodeToMemory(block)
	path = filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(path, pemText, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, pemText
}

// bodyLines are the key's base64 lines: none may survive redaction.
func bodyLines(pemText []byte) []string {
	var out []string
	for _, l := range strings.Split(string(pemText), "\n") {
		if l != "" && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	return out
}

func TestRedactEveryEncoding(t *testing.T) {
	path, pemText := keyFile(t)
	secrets, err := WithPath(path)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Join(bodyLines(pemText), "")
	jsonPEM, _ := json.Marshal(string(pemText))
	printed := map[string]string{
		"pem":          "key:\n" + string(pemText) + "done",
		"json-escaped": string(jsonPEM),
		"joined body":  "b64=" + body,
		"one line":     "line: " + bodyLines(pemText)[0] + " end",
	}
	for name, text := range printed {
		t.Run(name, func(t *testing.T) {
			if len(Found([]byte(text), secrets)) == 0 {
				t.Fatalf("no secret found in %q", text)
			}
			out := string(Redact([]byte(text), secrets))
			for _, l := range bodyLines(pemText) {
				if len(l) >= minLine && strings.Contains(out, l) {
					t.Errorf("a key line survived redaction: %q", out)
				}
			}
			if !strings.Contains(out, "[REDACTED: ") {
				t.Errorf("no redaction marker in %q", out)
			}
		})
	}
}

func TestRedactKeepsJSONValid(t *testing.T) {
	path, pemText := keyFile(t)
	secrets, err := OfKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]string{"stdout": string(pemText), "stderr": strings.Join(bodyLines(pemText), "\n")})
	out := Redact(doc, ForJSON(secrets))
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("redacted JSON no longer parses: %v\n%s", err, out)
	}
	for _, l := range bodyLines(pemText) {
		if len(l) >= minLine && strings.Contains(string(out), l) {
			t.Errorf("a key line survived: %s", out)
		}
	}
}

func TestOrdinaryTextUntouched(t *testing.T) {
	path, _ := keyFile(t)
	secrets, err := WithPath(path)
	if err != nil {
		t.Fatal(err)
	}
	text := []byte(`{"category":"succeeded","message":"exit 0"}`)
	if got := Redact(append([]byte(nil), text...), secrets); string(got) != string(text) {
		t.Fatalf("redaction changed ordinary text: %s", got)
	}
	if f := Found(text, secrets); f != nil {
		t.Fatalf("found %v in ordinary text", f)
	}
}

func TestMissingKeyFile(t *testing.T) {
	if _, err := OfKeyFile(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Fatal("no error for a missing key file")
	}
}

// Text cut at a buffer's edge or quoted short keeps a fragment of a key
// line; no run of MinFragment characters of the key may survive.
func TestRedactFragments(t *testing.T) {
	path, pemText := keyFile(t)
	secrets, err := WithPath(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bodyLines(pemText)
	last := lines[len(lines)-2] // a full line from the private part
	jsonPEM, _ := json.Marshal(string(pemText))
	cut := string(jsonPEM)[:len(jsonPEM)*2/3]
	printed := map[string]string{
		"cut at the end":       "stdout: " + string(pemText)[:len(pemText)/2],
		"quoted short":         `invalid character 'x' looking for value: "` + last[:30] + `…"`,
		"cut JSON-escaped PEM": cut,
		"a line cut both ends": "…" + last[5:35] + "…",
	}
	for name, text := range printed {
		t.Run(name, func(t *testing.T) {
			out := string(Redact([]byte(text), secrets))
			body := strings.Join(lines, "")
			for i := 0; i+MinFragment <= len(out); i++ {
				if strings.Contains(body, out[i:i+MinFragment]) {
					t.Fatalf("%d characters of the key survived at %d: %q", MinFragment, i, out)
				}
			}
			if !strings.Contains(out, "[REDACTED: ") {
				t.Fatalf("no marker in %q", out)
			}
		})
	}
	// Ordinary long tokens stay: digests, ids, paths.
	for _, text := range []string{
		"digest 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"correlation c-aca1212b-0002-eec81c, record rec-c-28e4332c-0003-3f84d1",
	} {
		if got := string(Redact([]byte(text), secrets)); got != text {
			t.Errorf("ordinary text changed: %q -> %q", text, got)
		}
	}
}
