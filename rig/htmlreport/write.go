package htmlreport

import (
	_ "embed"
	"errors"
	"html/template"
	"io"
)

//go:embed page.html
var pageHTML string

var pageTmpl = template.Must(template.New("page").Parse(pageHTML))

// Write renders the runs, in the order given, as one HTML page.
func Write(w io.Writer, runs []*Run) error {
	if len(runs) == 0 {
		return errors.New("htmlreport: no runs")
	}
	return pageTmpl.Execute(w, build(runs))
}
