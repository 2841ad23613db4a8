package yamlnode

import (
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// Unwrap skips anchors and tags.
func Unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		default:
			return n
		}
	}
}

// Describe names a node's kind for an error: "a mapping", "a list", …
func Describe(n ast.Node) string {
	switch Unwrap(n).(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.IntegerNode, *ast.FloatNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.NullNode:
		return "empty (null)"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.AliasNode:
		return "an alias"
	}
	return "something else"
}

// Mapping returns a mapping node's pairs, also for a single "key: value"
// that the parser returns as one MappingValueNode.
func Mapping(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch v := Unwrap(n).(type) {
	case *ast.MappingNode:
		return v.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{v}, true
	}
	return nil, false
}

// String is a string node's value (plain, quoted or a literal block).
func String(n ast.Node) (string, bool) {
	switch v := Unwrap(n).(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	}
	return "", false
}

// Start is where a node starts: a mapping's first key, not the colon the
// parser hands back as the mapping's token.
func Start(n ast.Node) *token.Token {
	if pairs, ok := Mapping(n); ok && len(pairs) > 0 {
		return pairs[0].Key.GetToken()
	}
	return n.GetToken()
}
