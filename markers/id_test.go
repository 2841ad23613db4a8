package markers

import (
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	const hint = " not allowed (use A-Z a-z 0-9 . _ : -, starting with a letter or digit)"
	tests := []struct {
		name    string
		id      string
		wantErr string // empty: valid
	}{
		{name: "letters", id: "abc"},
		{name: "single digit", id: "7"},
		{name: "all allowed characters", id: "Case-01.retry_2:x"},
		{name: "longest", id: strings.Repeat("a", 128)},
		{name: "space", id: "a b", wantErr: `markers: id "a b": character ' ' at 1` + hint},
		{name: "empty", id: "", wantErr: `markers: id "": empty (use A-Z a-z 0-9 . _ : -, starting with a letter or digit)`},
		{name: "too long", id: strings.Repeat("a", 129), wantErr: `129 characters, longer than 128`},
		{name: "starts with dot", id: ".hidden", wantErr: `character '.' at 0` + hint},
		{name: "starts with dash", id: "-rf", wantErr: `character '-' at 0` + hint},
		{name: "starts with underscore", id: "_x", wantErr: `character '_' at 0` + hint},
		{name: "slash", id: "a/b", wantErr: `character '/' at 1` + hint},
		{name: "single quote", id: "it's", wantErr: `character '\'' at 2` + hint},
		{name: "dollar", id: "a$HOME", wantErr: `character '$' at 1` + hint},
		{name: "newline", id: "a\nb", wantErr: `character '\n' at 1` + hint},
		{name: "NUL", id: "a\x00", wantErr: `character '\x00' at 1` + hint},
		{name: "non-ASCII letter", id: "caf\u00e9", wantErr: `character 'é' at 3` + hint},
		{name: "invalid UTF-8", id: "ab\xff", wantErr: `character '\xff' at 2` + hint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidID(tt.id)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidID(%q) = %v, want nil", tt.id, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidID(%q) = nil, want error containing %q", tt.id, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ValidID(%q) = %q, want it to contain %q", tt.id, err, tt.wantErr)
			}
		})
	}
}

func TestValidIDLongErrorIsBounded(t *testing.T) {
	err := ValidID(strings.Repeat("x", 100000))
	if err == nil || len(err.Error()) > 200 {
		t.Fatalf("error for a huge id should be short, got %d bytes", len(err.Error()))
	}
}
