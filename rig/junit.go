package rig

import (
	"encoding/xml"
	"fmt"
	"strings"
)

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// JUnit renders the report as JUnit XML: failures are verdict failures,
// errors are inconclusive cases.
func (r *Report) JUnit() ([]byte, error) {
	s := junitSuite{Name: "sshrig " + r.Tool, Tests: r.Summary.Cases, Failures: r.Summary.Fail,
		Errors: r.Summary.Inconclusive, Skipped: r.Summary.Skipped, Time: seconds(r.Summary.DurationMS)}
	for _, c := range r.Cases {
		jc := junitCase{Name: c.ID, Classname: "sshrig." + r.Target, Time: seconds(c.DurationMS)}
		switch c.Verdict {
		case Fail:
			var lines []string
			for _, v := range c.Violations {
				lines = append(lines, v.String())
			}
			jc.Failure = &junitMessage{Message: "verdict failed", Body: strings.Join(lines, "\n")}
		case Inconclusive:
			jc.Error = &junitMessage{Message: "inconclusive", Body: c.Reason}
		case Skipped:
			jc.Skipped = &junitMessage{Message: c.Reason}
		}
		s.Cases = append(s.Cases, jc)
	}
	b, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

func seconds(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }
