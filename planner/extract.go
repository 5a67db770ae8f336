package planner

import (
	"regexp"
	"strings"
	"sync"
)

var (
	titleLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^#\s+Plan\b`) })
	taskLine  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^##\s+\[[ xX]\]\s+[A-Za-z0-9][A-Za-z0-9._-]*\s*:`) })
	fenceLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^(```+|~~~+)") })
)

// Extract returns the first Markdown plan in an agent's final message, or
// nil: the first fenced block that holds a task heading, else the text
// from the first "# Plan" title (or, without one, the first task heading)
// to the end of the message, without a fence that closes it. It is how a
// planner that cannot write files hands over its plan.
func Extract(msg string) []byte {
	if len(msg) > MaxPlanBytes {
		msg = msg[:MaxPlanBytes]
	}
	lines := strings.Split(strings.ReplaceAll(msg, "\r\n", "\n"), "\n")
	if block := fencedPlan(lines); block != "" {
		return []byte(block)
	}
	start := -1
	for i, l := range lines {
		if titleLine().MatchString(l) {
			start = i
			break
		}
	}
	if start < 0 {
		for i, l := range lines {
			if taskLine().MatchString(l) {
				start = i
				break
			}
		}
	}
	if start < 0 {
		return nil
	}
	body := lines[start:]
	// A plan inside a fence opened before it ends where the fence closes.
	if fenceOpensBefore(lines[:start]) {
		for i, l := range body {
			if fenceLine().MatchString(strings.TrimSpace(l)) {
				body = body[:i]
				break
			}
		}
	}
	return []byte(strings.TrimSpace(strings.Join(body, "\n")) + "\n")
}

// fencedPlan returns the content of the first fenced block that holds a
// task heading.
func fencedPlan(lines []string) string {
	for i := 0; i < len(lines); i++ {
		m := fenceLine().FindString(strings.TrimSpace(lines[i]))
		if m == "" {
			continue
		}
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			if closes(strings.TrimSpace(lines[j]), m) {
				break
			}
			body = append(body, lines[j])
		}
		for _, l := range body {
			if taskLine().MatchString(l) {
				return strings.TrimSpace(strings.Join(body, "\n")) + "\n"
			}
		}
		i = j
	}
	return ""
}

// fenceOpensBefore reports whether an odd number of fence lines precede
// the plan: it starts inside a block that a later fence closes.
func fenceOpensBefore(lines []string) bool {
	n := 0
	for _, l := range lines {
		if fenceLine().MatchString(strings.TrimSpace(l)) {
			n++
		}
	}
	return n%2 == 1
}

// closes reports whether line closes a block opened by the fence open:
// only the fence's character, at least as many.
func closes(line, open string) bool {
	return len(line) >= len(open) && strings.Trim(line, open[:1]) == ""
}
