package reading

import (
	"embed"
	"fmt"
	"os"
	"sort"
	"strings"
)

//go:embed builtin/*.yaml
var builtinFiles embed.FS

// Builtins lists the built-in readings' names.
func Builtins() []string {
	entries, err := builtinFiles.ReadDir("builtin")
	if err != nil {
		panic(err) // embedded at build time
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// Builtin returns the built-in reading of that name.
func Builtin(name string) (*Reading, bool) {
	data, err := builtinFiles.ReadFile("builtin/" + name + ".yaml")
	if err != nil {
		return nil, false
	}
	r, err := Load("builtin:"+name, data)
	if err != nil {
		panic(err) // the built-ins are tested
	}
	return r, true
}

// BuiltinSource is a built-in reading's YAML, to show or start from.
func BuiltinSource(name string) ([]byte, bool) {
	data, err := builtinFiles.ReadFile("builtin/" + name + ".yaml")
	return data, err == nil
}

// Open returns the built-in reading named nameOrFile, or loads the file of
// that path. A name that is neither says which built-ins there are.
func Open(nameOrFile string) (*Reading, error) {
	if r, ok := Builtin(nameOrFile); ok {
		return r, nil
	}
	if _, err := os.Stat(nameOrFile); err != nil {
		return nil, fmt.Errorf("reading %q: not a built-in (%s) and not a file: %w", nameOrFile, strings.Join(Builtins(), ", "), err)
	}
	return LoadFile(nameOrFile)
}
