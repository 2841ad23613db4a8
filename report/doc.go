// Package report owns what a run writes about its cases: report.json's types
// (Report, CaseReport, the verdicts, grades and violations, the summary
// counts and a repeated run's rates), reading it back (ReadReport) and
// comparing a replay with its recording, and the forms a report is printed
// in: the table, JUnit XML, GitHub Actions annotations and step summary, and
// the HTML page (package report/htmlreport). Reading a report links no SSH
// server: package rig writes reports; this package only describes them.
package report
