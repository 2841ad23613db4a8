package report

import (
	"fmt"
	"io"
	"strings"
)

// CaseSource says where a case is defined, for annotations that point at
// it: the matrix file and line, or "" when unknown.
type CaseSource func(id string) (file string, line int)

// failingRates are the cases that failed at all, with their rates (a run
// that is not repeated has one run per case).
func (r *Report) failingRates() []CaseRate {
	rates := r.Rates
	if r.Repeat == nil {
		rates = Rates(r.Cases)
	}
	var out []CaseRate
	for _, c := range rates {
		if c.Fail > 0 {
			out = append(out, c)
		}
	}
	return out
}

// WriteGitHubAnnotations writes GitHub Actions workflow commands, one
// ::error per failing case and one ::warning per inconclusive case, each
// pointing at where the case is defined when src knows it.
func (r *Report) WriteGitHubAnnotations(w io.Writer, src CaseSource) {
	loc := func(id string) string {
		if src == nil {
			return ""
		}
		file, line := src(id)
		if file == "" {
			return ""
		}
		s := ",file=" + ghProperty(file)
		if line > 0 {
			s += fmt.Sprintf(",line=%d", line)
		}
		return s
	}
	for _, rate := range r.failingRates() {
		first := firstFailing(r.Cases, rate.ID)
		msg := first.CorrelationID + ": " + violationText(first)
		if rate.Runs > 1 {
			msg = fmt.Sprintf("failed %d of %d judged runs, %s (%s); first %s %s", rate.Fail, rate.Judged(), rate.Failure, rate.Status(), first.RunName(), msg)
		}
		fmt.Fprintf(w, "::error title=%s%s::%s\n", ghProperty("sshrig: "+rate.ID+" "+rate.Status()), loc(rate.ID), ghData(msg))
	}
	for _, rate := range r.inconclusiveRates() {
		fmt.Fprintf(w, "::warning title=%s%s::%s\n", ghProperty("sshrig: "+rate.ID+" inconclusive"), loc(rate.ID),
			ghData(firstReason(casesOf(r.Cases, rate.ID), Inconclusive)))
	}
}

func (r *Report) inconclusiveRates() []CaseRate {
	var out []CaseRate
	for _, c := range Rates(r.Cases) {
		if c.Inconclusive > 0 && c.Fail == 0 {
			out = append(out, c)
		}
	}
	return out
}

func casesOf(cases []CaseReport, id string) []CaseReport {
	var out []CaseReport
	for _, c := range cases {
		if c.ID == id {
			out = append(out, c)
		}
	}
	return out
}

func firstFailing(cases []CaseReport, id string) CaseReport {
	for _, c := range cases {
		if c.ID == id && c.Verdict == Fail {
			return c
		}
	}
	return CaseReport{}
}

// ghData escapes a workflow command's message.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command's property value.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// WriteStepSummary writes the run's Markdown summary for a GitHub Actions
// job's summary page ($GITHUB_STEP_SUMMARY): the summary line, and a table
// of the failing cases with their rates.
func (r *Report) WriteStepSummary(w io.Writer) {
	s := r.Summary
	fmt.Fprintf(w, "## sshrig: %s on %s\n\n", r.Tool, r.Target)
	fmt.Fprintf(w, "%d case runs: %d pass, %d fail, %d inconclusive, %d skipped in %.1fs",
		s.Cases, s.Pass, s.Fail, s.Inconclusive, s.Skipped, float64(s.DurationMS)/1000)
	if r.Repeat != nil {
		fmt.Fprintf(w, " (seed %d: replay a case run with `sshrig replay RUN_DIR CASE_RUN`)", r.Repeat.Seed)
	}
	switch {
	case r.Shard != nil:
		fmt.Fprintf(w, "; shard %s", r.Shard)
	case len(r.Merged) > 0:
		fmt.Fprintf(w, "; %d shards merged", len(r.Merged))
	}
	fmt.Fprint(w, "\n\n")
	failing := r.failingRates()
	if len(failing) == 0 {
		fmt.Fprint(w, "No case failed.\n")
		return
	}
	fmt.Fprint(w, "| case | status | runs | fail | failure rate [95% CI] | first failing run | violations |\n")
	fmt.Fprint(w, "| --- | --- | ---: | ---: | --- | --- | --- |\n")
	for _, rate := range failing {
		first := firstFailing(r.Cases, rate.ID)
		fmt.Fprintf(w, "| `%s` | %s | %d | %d | %s | `%s` %s | %s |\n", rate.ID, rate.Status(), rate.Runs, rate.Fail, rate.Failure,
			first.RunName(), first.CorrelationID, mdCell(violationTypes(first)))
	}
}

// mdCell keeps a table cell on one line and its pipes literal.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
