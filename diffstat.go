package muster

import "strings"

// FileStat is one file of a change as the attempt log shows it: its
// path and how many lines the change added and deleted there (none for
// a binary file).
type FileStat struct {
	Path           string
	Added, Deleted int
}

// ChangeSummary is what a round needs of a change besides its files: the
// lines each file gained and lost, and a digest that is equal for equal
// changes (the stalemate check: a fix round that changed nothing).
type ChangeSummary struct {
	Files  []FileStat
	Digest string
}

// PatchStat counts, in a unified diff, the added and deleted lines of
// each file, in the diff's order, named by the new path of its
// "diff --git a/X b/Y" line.
func PatchStat(patch string) []FileStat {
	var files []FileStat
	for _, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			files = append(files, FileStat{Path: patchPath(l)})
		case len(files) == 0:
		case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
		case strings.HasPrefix(l, "+"):
			files[len(files)-1].Added++
		case strings.HasPrefix(l, "-"):
			files[len(files)-1].Deleted++
		}
	}
	return files
}

// patchPath is the new path of a "diff --git a/X b/Y" line.
func patchPath(l string) string {
	rest := strings.TrimPrefix(l, "diff --git ")
	if i := strings.LastIndex(rest, " b/"); i >= 0 {
		return rest[i+3:]
	}
	return rest
}
