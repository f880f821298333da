package reports

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Files a report folder holds.
const (
	JUnitFile = "junit.xml"
	JSONFile  = "report.json"
	HTMLFile  = "report.html"
	TextFile  = "summary.txt"
	// CoverageFile is every store's coverage matrix, as text.
	CoverageFile = "coverage.txt"
)

// WriteDir writes every form of the report into dir.
func WriteDir(dir string, r Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, write := range map[string]func(io.Writer, Run) error{
		JUnitFile: WriteJUnit,
		JSONFile:  WriteJSON,
		HTMLFile:  WriteHTML,
		// The saved summary is DefaultWidth wide whatever the terminal:
		// the same run, the same bytes.
		TextFile: func(w io.Writer, r Run) error { writeText(w, r, DefaultWidth); return nil },
		CoverageFile: func(w io.Writer, r Run) error {
			WriteCoverage(w, r.Coverage)
			return nil
		},
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := write(f, r); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes the run for tools.
func WriteJSON(w io.Writer, r Run) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// The JUnit XML schema the usual CI viewers read: one test suite per store
// and layer, one test case per check.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Tests   int          `xml:"tests,attr"`
	Fail    int          `xml:"failures,attr"`
	Errors  int          `xml:"errors,attr"`
	Skipped int          `xml:"skipped,attr"`
	Time    float64      `xml:"time,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Fail       int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       float64         `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	Skipped   *junitProblem `xml:"skipped"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the run as JUnit XML. A failure carries its message,
// details, the command that checks its saved history again and the one
// that reproduces it; an inconclusive check is an
// error (it is not a pass, and not a conformance failure).
func WriteJUnit(w io.Writer, r Run) error {
	out := junitSuites{Name: "storecheck", Time: r.Duration.Seconds()}
	idx := map[[2]string]int{}
	for _, c := range r.Checks {
		k := [2]string{c.Store, c.Layer}
		i, ok := idx[k]
		if !ok {
			i = len(out.Suites)
			idx[k] = i
			props := []junitProperty{{"backend", r.Backend}, {"seed", fmt.Sprint(r.Seed)}}
			if seeds := r.seedsOf(c.Layer); seeds != "" {
				props = append(props, junitProperty{"seeds", seeds})
			}
			for _, n := range r.Notes {
				props = append(props, junitProperty{"not explored", n})
			}
			out.Suites = append(out.Suites, junitSuite{Name: c.Store + "/" + c.Layer, Properties: props})
		}
		s := &out.Suites[i]
		tc := junitCase{Name: c.Name, ClassName: "storecheck." + c.Store + "." + c.Layer, Time: c.Duration.Seconds()}
		body := strings.TrimSpace(strings.Join(nonEmpty(c.Message, c.Details, recheckLine(c), reproduceLine(c)), "\n\n"))
		switch c.Outcome {
		case Failed:
			kind := "conformance"
			if c.Layer == BackendLayer {
				kind = "backend"
			}
			tc.Failure = &junitProblem{Message: firstLine(c.Message), Type: kind, Text: body}
			s.Fail++
			out.Fail++
		case Inconclusive:
			tc.Error = &junitProblem{Message: firstLine(c.Message), Type: "inconclusive", Text: body}
			s.Errors++
			out.Errors++
		case Skipped:
			tc.Skipped = &junitProblem{Message: c.Message}
			s.Skipped++
			out.Skipped++
		case NotRun:
			tc.Skipped = &junitProblem{Message: c.Message, Type: "not run"}
			s.Skipped++
			out.Skipped++
		}
		s.Tests++
		s.Time += c.Duration.Seconds()
		out.Tests++
		s.Cases = append(s.Cases, tc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func reproduceLine(c Check) string {
	if c.Reproduce == "" {
		return ""
	}
	return "reproduce: " + c.Reproduce
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
