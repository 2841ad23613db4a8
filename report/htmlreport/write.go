package htmlreport

import (
	_ "embed"
	"errors"
	"html/template"
	"io"
)

// FileName is the page's name in a run directory, where sshrig report
// writes it unless told otherwise.
const FileName = "report.html"

//go:embed page.html
var pageHTML string

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"label": statusLabel,
	"cut":   cutHead,
}).Parse(pageHTML))

// Write renders the runs, in the order given, as one HTML page.
func Write(w io.Writer, runs []*Run) error {
	if len(runs) == 0 {
		return errors.New("htmlreport: no runs")
	}
	return pageTmpl.Execute(w, build(runs))
}
