package score

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/sshrig/sshrig/reconcile"
)

// FindingsText is findings in one line, as the report's text says them.
func FindingsText(fs []Finding) string {
	var parts []string
	for _, f := range fs {
		parts = append(parts, f.Kind+": "+f.Detail)
	}
	return strings.Join(parts, "; ")
}

// WriteText prints the report for a terminal: a line per state, the
// confusion matrix, every wrong and weak cell and every finding by name.
func (rep *Report) WriteText(w io.Writer) {
	where := "locally"
	if rep.Remote {
		where = "on the target"
	}
	fmt.Fprintf(w, "operation %s, target %s, probe run %s: %s\n\n", rep.Operation, rep.Target, where, oneLine(rep.Probe, 100))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATE\tTRUTH\tWANT\tANSWER\tMARK\tEVIDENCE")
	for _, row := range rep.Rows {
		truth := "-"
		if row.Truth != nil {
			truth = string(row.Truth.State)
			if row.Truth.Starts > 1 {
				truth += fmt.Sprintf(" x%d", row.Truth.Starts)
			}
			if row.Truth.State == reconcile.Completed && row.Truth.ExitCode != nil {
				truth += fmt.Sprintf("(%d)", *row.Truth.ExitCode)
			}
		}
		answer, evidence := "-", ""
		if row.Answer != nil {
			answer, evidence = string(row.Answer.State), row.Answer.Evidence
		}
		switch {
		case row.Mark == reconcile.Inconclusive:
			evidence = row.NotProduced
		case len(row.Findings) > 0:
			evidence = FindingsText(row.Findings)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", row.State, truth, row.Expected, answer, row.Mark, oneLine(evidence, 90))
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "confusion matrix (rows: the truth; columns: the probe's answer; [the right answer]):")
	rep.Matrix.WriteTable(w)
	for _, c := range rep.WrongCells {
		fmt.Fprintf(w, "wrong: %s\n", c.Text)
	}
	for _, c := range rep.WeakCells {
		fmt.Fprintf(w, "weak:  %s\n", c.Text)
	}
	for _, row := range rep.Rows {
		for _, f := range row.Findings {
			fmt.Fprintf(w, "finding: %s: %s: %s\n", row.State, f.Kind, f.Detail)
		}
		if row.Mark == reconcile.Inconclusive {
			fmt.Fprintf(w, "inconclusive: %s: %s\n", row.State, row.NotProduced)
		}
	}
}

// SummaryLine is the one-line summary.
func (rep *Report) SummaryLine() string {
	s := rep.Summary
	verdict := "PASS"
	switch {
	case s.Failed():
		verdict = "FAIL"
	case s.Inconclusive > 0:
		verdict = "INCONCLUSIVE"
	}
	return fmt.Sprintf("%s: %d states: %d correct, %d weak (unknown), %d wrong, %d no answer, %d inconclusive; %d with findings (%.1fs)",
		verdict, s.States, s.Correct, s.Weak, s.Wrong, s.NoAnswer, s.Inconclusive, s.WithFindings, float64(s.DurationMS)/1000)
}

// oneLine flattens s to one line of at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n-3], "") + "..." // no rune cut in half
	}
	return s
}
