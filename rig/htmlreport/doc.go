// Package htmlreport owns sshrig report's page: one self-contained HTML file
// (html/template, inline CSS, JavaScript and SVG, no external request) built
// from run directories. Per case it shows the rates of every given run side
// by side, so several nights show a trend; per case run a timeline in lanes
// (tool, cutter, server, remote command, probes) with the moment, the cut,
// the markers, the result and the verdict. As in Jepsen's timeline, what
// never completed is drawn open-ended: a command with no exit, an answer
// that was outcome_unknown.
//
// Timelines are drawn in the browser from compact data (a label table and
// [time, lane, label] triples), so a repeated run of the whole matrix stays a
// small file.
package htmlreport
