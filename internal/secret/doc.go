// Package secret owns what must never leave the rig in a report, a
// transcript or a log: the per-run private key in every encoding a tool or a
// probe might print (PEM text, JSON-escaped PEM, the base64 body joined or a
// line of it), and the identity file's path where printing it exposes the
// key. It finds those forms and replaces them.
package secret
