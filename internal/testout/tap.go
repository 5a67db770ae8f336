package testout

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
)

var (
	tapSubtest = lazyRegexp(`^(\s*)# Subtest: (.+)$`)
	tapNotOk   = lazyRegexp(`^(\s*)not ok \d+ - (.+?)(\s+#\s*(TODO|SKIP)\b.*)?$`)
	tapField   = lazyRegexp(`^\s+(failureType|error): ?(.*)$`)
)

// tapParse: `not ok N - name` (TODO and SKIP left out), named under its
// enclosing subtests ("math > adds"), with its YAML block's error;
// parents that failed only because a subtest did are left out.
func tapParse(lines []string) []Failure {
	type open struct {
		depth int
		name  string
	}
	var stack []open
	var out []Failure
	for i, l := range lines {
		if m := tapSubtest().FindStringSubmatch(l); m != nil {
			d := len(m[1])
			for len(stack) > 0 && stack[len(stack)-1].depth >= d {
				stack = stack[:len(stack)-1]
			}
			stack = append(stack, open{d, m[2]})
			continue
		}
		m := tapNotOk().FindStringSubmatch(l)
		if m == nil || m[3] != "" {
			continue
		}
		d := len(m[1])
		var path []string
		for _, o := range stack {
			if o.depth < d {
				path = append(path, o.name)
			}
		}
		kind, msg := tapYAML(lines[i+1:], d)
		if kind == "subtestsFailed" {
			continue
		}
		out = append(out, Failure{Name: strings.Join(append(path, m[2]), " > "), Message: msg})
	}
	return out
}

// tapYAML reads failureType and the error's first lines from the YAML
// block after a `not ok` line at indent d.
func tapYAML(lines []string, d int) (kind, msg string) {
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "---" {
		return "", ""
	}
	for i, l := range lines[1:] {
		if strings.TrimSpace(l) == "..." || indent(l) <= d && strings.TrimSpace(l) != "" {
			break
		}
		m := tapField().FindStringSubmatch(l)
		if m == nil {
			continue
		}
		v := strings.Trim(strings.TrimSpace(m[2]), `'"`)
		if m[1] == "failureType" {
			kind = v
			continue
		}
		if v == "|-" || v == "|" || v == ">-" {
			v = joinColon(lines[i+2:], indent(l))
		}
		msg = v
	}
	return kind, msg
}

// joinColon is the first non-blank line deeper than depth, and when it ends
// with a colon ("Expected values to be strictly equal:") the next one too.
func joinColon(lines []string, depth int) string {
	var got []string
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if indent(l) <= depth {
			break
		}
		got = append(got, strings.TrimSpace(l))
		if !strings.HasSuffix(got[0], ":") || len(got) == 2 {
			break
		}
	}
	return strings.Join(got, " ")
}

var (
	nodeFail    = lazyRegexp(`^(\s*)✖ (.+?) \([\d.]+m?s\)$`)
	nodeFailing = lazyRegexp(`^✖ failing tests:$`)
)

// nodeSpecParse: node --test's spec reporter. Its "✖ failing tests:"
// section lists the leaves; without it, each ✖ line with an error under
// it.
func nodeSpecParse(lines []string) []Failure {
	from := 0
	for i, l := range lines {
		if nodeFailing().MatchString(l) {
			from = i + 1
		}
	}
	var out []Failure
	for i := from; i < len(lines); i++ {
		m := nodeFail().FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		msg := joinColon(lines[i+1:], len(m[1]))
		if msg == "" || strings.HasPrefix(msg, "✖") || strings.HasPrefix(msg, "✔") || strings.HasPrefix(msg, "▶") {
			continue // a parent: its failing subtests are listed
		}
		msg = strings.TrimPrefix(msg, "AssertionError [ERR_ASSERTION]: ")
		out = append(out, Failure{Name: m[2], Message: msg})
	}
	return out
}

type junitCase struct {
	Class   string `xml:"classname,attr"`
	Name    string `xml:"name,attr"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Body    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
		Body    string `xml:",chardata"`
	} `xml:"error"`
}

// JUnit reads JUnit XML (one document or several concatenated, suites
// nested or not): each <testcase> with a <failure> or <error>, named
// classname.name, with the failure's message attribute or its text's
// first line.
func JUnit(data []byte) (Report, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	var out []Failure
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Report{}, err
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "testcase" {
			continue
		}
		var c junitCase
		if err := d.DecodeElement(&c, &se); err != nil {
			return Report{}, err
		}
		name := c.Name
		if c.Class != "" && !strings.HasPrefix(name, c.Class) {
			name = c.Class + "." + c.Name
		}
		switch {
		case c.Failure != nil:
			out = append(out, Failure{Name: name, Message: firstOf(firstLine(c.Failure.Message), firstLine(c.Failure.Body))})
		case c.Error != nil:
			out = append(out, Failure{Name: name, Message: firstOf(firstLine(c.Error.Message), firstLine(c.Error.Body))})
		}
	}
	return Report{Runner: "junit", Failures: dedupe(out)}, nil
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
