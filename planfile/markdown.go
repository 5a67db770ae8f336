package planfile

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/muster-run/muster"
)

// fieldLine matches a "Key: value" line of a task's field block.
var fieldLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*([A-Za-z][A-Za-z0-9_-]*)\s*:(.*)$`) })

// parseMarkdown reads the Markdown plan format.
func parseMarkdown(name string, data []byte) (*muster.Plan, muster.Problems) {
	ps := &problems{file: name}
	p := &muster.Plan{Source: name, Tasks: []*muster.Task{}}
	lines := strings.Split(string(data), "\n")

	var (
		brief    []string
		cur      *muster.Task
		body     []string
		inFields bool
		fence    string // the open code fence marker, if any
	)
	finish := func() {
		if cur != nil {
			cur.Prompt = joinTrimmed(body)
		}
		body = nil
	}
	for i, line := range lines {
		ln := i + 1
		line = strings.TrimSuffix(line, "\r")
		trimmed := strings.TrimSpace(line)

		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			appendLine(cur, &brief, &body, line)
			continue
		}
		if heading, ok := taskHeading(line); ok {
			finish()
			var ok bool
			cur, ok = ps.newTask(heading, ln)
			if ok {
				p.Tasks = append(p.Tasks, cur)
			}
			inFields = true
			continue
		}
		if inFields {
			if trimmed == "" {
				inFields = false
				continue
			}
			if m := fieldLine().FindStringSubmatch(line); m != nil {
				if c := canonicalKey(m[1]); c != "" {
					ps.setField(cur, c, m[2], ln)
				} else {
					ps.unknownKey(ln, m[1], Keys)
				}
				continue
			}
			inFields = false
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
		}
		if cur == nil && p.Title == "" && len(strings.TrimSpace(strings.Join(brief, ""))) == 0 {
			if t, ok := planTitle(trimmed); ok {
				p.Title = t
				ps.checkPlanTitle(t, ln)
				continue
			}
		}
		appendLine(cur, &brief, &body, line)
	}
	finish()
	p.Brief = joinTrimmed(brief)
	ps.strayFields(p.Tasks, lines)
	return p, ps.list
}

// strayFields warns of a task whose heading a blank line follows, then a
// field line: by the format that line is prompt text (fields follow the
// heading directly), and the task would run without the Owns or the
// gate its author meant it to have.
func (ps *problems) strayFields(tasks []*muster.Task, lines []string) {
	for _, t := range tasks {
		i := t.Line // the line after the heading, 0-based
		if i >= len(lines) || strings.TrimSpace(lines[i]) != "" {
			continue
		}
		for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
			i++
		}
		if i == len(lines) {
			continue
		}
		if m := fieldLine().FindStringSubmatch(strings.TrimSuffix(lines[i], "\r")); m != nil && canonicalKey(m[1]) != "" {
			ps.list = append(ps.list, muster.Problem{File: ps.file, Line: i + 1, Warning: true,
				Message: fmt.Sprintf("task %s: %q after a blank line is prompt text, not a field (the task has no %s): field lines follow the heading directly; remove the blank line above", t.ID, m[1]+":", m[1])})
		}
	}
}

func appendLine(cur *muster.Task, brief, body *[]string, line string) {
	if cur == nil {
		*brief = append(*brief, line)
	} else {
		*body = append(*body, line)
	}
}

// checkPlanTitle refuses a plan title with a control character, as a
// task's: it becomes a pull request's title (muster pr) and is shown.
func (ps *problems) checkPlanTitle(title string, ln int) {
	if muster.HasControl(title) {
		ps.addf(ln, "the plan's title holds a control character (such as NUL, an escape or a bidirectional override); write it as plain text")
	}
}

// planTitle reads a "# Plan: title" line.
func planTitle(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "#")
	if !ok || strings.HasPrefix(rest, "#") {
		return "", false
	}
	rest, ok = cutPrefixFold(strings.TrimSpace(rest), "plan:")
	if !ok {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// taskHeading reports whether line is a level-2 heading that starts with
// a checkbox, and returns the text after "##".
func taskHeading(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "##")
	if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "[") {
		return "", false
	}
	return rest, true
}

// newTask builds a task from a heading "[ ] ID: Title" at line ln. ok is
// false when the heading is too broken to name a task; the task then only
// absorbs its fields and prompt.
func (ps *problems) newTask(h string, ln int) (t *muster.Task, ok bool) {
	t = &muster.Task{Line: ln, KeyLines: map[string]int{}}
	var rest string
	switch {
	case strings.HasPrefix(h, "[ ]"):
		rest = h[3:]
	case strings.HasPrefix(h, "[x]"), strings.HasPrefix(h, "[X]"):
		rest, t.Done = h[3:], true
	default:
		ps.addf(ln, `bad task heading: want "## [ ] ID: Title" (or "[x]" for a task already done)`)
		return t, false
	}
	rest = strings.TrimSpace(rest)
	id, title, _ := strings.Cut(rest, ":")
	id, title = strings.TrimSpace(id), strings.TrimSpace(title)
	if id == "" {
		ps.addf(ln, `task heading has no ID: want "## [ ] ID: Title"`)
		return t, false
	}
	if first, more, spaced := strings.Cut(id, " "); title == "" && spaced && !strings.Contains(rest, ":") {
		ps.addf(ln, `task heading has no ":" after its ID: want "## [ ] %s: %s"`, first, strings.TrimSpace(more))
		return t, false
	}
	if title == "" {
		ps.addf(ln, `task %s has no title: want "## [ ] %s: Title"`, id, id)
	}
	t.ID, t.Title = muster.TaskID(id), title
	return t, true
}

// joinTrimmed joins lines, dropping leading and trailing blank lines.
func joinTrimmed(lines []string) string {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}
