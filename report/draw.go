package report

import (
	"strconv"
)

// RunName names the case run the report is about, as Case.RunName does.
func (cr CaseReport) RunName() string {
	if cr.Draw == nil {
		return cr.ID
	}
	return cr.ID + "#" + strconv.Itoa(cr.Draw.Round)
}
