// Package reading owns readings: declarative mappings from a tool's own
// report — its exit code, the signal that ended it, patterns in its output, a
// JSON path in its stdout, or an MCP answer's isError, structuredContent and
// text — to the result contract's category and retry. With a reading, a tool
// is judged as it is deployed, with no wrapper that speaks the contract
// (docs/readings.md).
//
// A reading is a YAML file (or a built-in: ssh, ansible, mcp-text) whose
// rules are tried in order; the first rule whose every condition holds gives
// the category and retry, and its name is the report's native value: the
// value the rig groups cases by to find a signal that stands for answers
// demanding different next actions (an ambiguous report). A report no rule
// matches is unread (ErrUnread), never guessed.
//
// Loading is strict, as for matrix files: an unknown field, a bad regular
// expression, a bad JSON path (RFC 9535, github.com/theory/jsonpath), a
// condition that cannot apply to the reading's kind of tool, or a missing
// category is an error naming the file, line, column and field.
package reading
