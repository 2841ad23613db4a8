// Package yamlnode owns the small readings of goccy/go-yaml's syntax tree
// that the project's strict YAML loaders (matrix files, reading files)
// share: parsing exactly one document, collecting every problem with its
// line, column and field and joining them in file order (each loader keeps
// its own public error type), looking through anchors and tags, a mapping's
// pairs, a node's kind in words, a string's value, and where a node starts.
package yamlnode
