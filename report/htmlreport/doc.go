// Package htmlreport owns sshrig report's page: one self-contained HTML file
// (html/template, inline CSS, JavaScript and SVG, no external request) built
// from run directories, written by default as FileName in the first.
//
// The page opens on a summary read at a glance: counts of case runs by
// verdict (a conservative pass shown as such), a moment x cut grid per
// disposition coloured by outcome or, for a repeated run, by failure rate
// (the Wilson interval explained in the legend and each tooltip), and the
// violations counted by rule. Then the cases, failing first, a column per
// run headed by tool, target and seed, with filters (verdict, rule, moment,
// cut, tool) and a search; every grid square and row opens its case's
// timelines. A case run's timeline has a lane per actor (tool, cutter,
// server, remote command, probes), and for an agent under test (sshrig
// agent) an agent lane of its MCP calls, its refusal and, beside the
// timeline, its final answers; as in Jepsen's, what never completed is
// drawn open-ended: a command with no exit, an answer that was
// outcome_unknown. Its labels are laid out in the browser by their measured
// width, a row per lane at a time, so none overlaps another.
//
// Timelines are drawn in the browser from compact data (a label table and
// [time, lane, label] triples), so a repeated run of the whole matrix stays a
// small file.
package htmlreport
