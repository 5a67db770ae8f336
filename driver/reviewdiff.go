package driver

import (
	"fmt"
	"strings"
)

// maxReviewDiff bounds the diff a review prompt holds; the whole diff is
// always in the reviewer's in/change.diff.
const maxReviewDiff = 60000

// diffFile is one file's part of a git diff.
type diffFile struct {
	path, text string
}

// splitDiff cuts a git diff into its files' parts ("diff --git a/P b/P"
// headers), in order. Text before the first header is a part of its own.
func splitDiff(diff string) []diffFile {
	var out []diffFile
	for len(diff) > 0 {
		next := strings.Index(diff[1:], "\ndiff --git ")
		part := diff
		if next >= 0 {
			part, diff = diff[:next+2], diff[next+2:]
		} else {
			diff = ""
		}
		out = append(out, diffFile{path: diffHeaderPath(part), text: part})
	}
	return out
}

// diffHeaderPath is the b/ path of a part's header ("" when it has none).
func diffHeaderPath(part string) string {
	line, _, _ := strings.Cut(part, "\n")
	rest, ok := strings.CutPrefix(line, "diff --git ")
	if !ok {
		return ""
	}
	if i := strings.LastIndex(rest, " b/"); i >= 0 {
		return rest[i+3:]
	}
	return rest
}

// shownDiff is what of a diff a review prompt holds: whole files, in
// order, as many as fit in limit bytes; the rest is named, never cut
// silently.
type shownDiff struct {
	text     string   // the files shown, whole
	left     int      // bytes of the diff not shown
	notShown []string // every file not shown
}

func fitDiff(diff string, limit int) shownDiff {
	if len(diff) <= limit {
		return shownDiff{text: diff}
	}
	var s shownDiff
	var b strings.Builder
	for _, f := range splitDiff(diff) {
		if b.Len()+len(f.text) <= limit {
			b.WriteString(f.text)
			continue
		}
		s.left += len(f.text)
		name := f.path
		if name == "" {
			name = "(text before the first file)"
		}
		s.notShown = append(s.notShown, name)
	}
	s.text = b.String()
	return s
}

// partial says what a review prompt left out: "" when it holds the
// whole diff.
func (s shownDiff) partial(total int) string {
	if s.left == 0 {
		return ""
	}
	return fmt.Sprintf("the review prompt held %d of the diff's %d bytes: %d bytes in %d files not shown (%s)",
		total-s.left, total, s.left, len(s.notShown), bound(strings.Join(s.notShown, ", "), 300))
}
