package driver

import (
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

func TestDiffStat(t *testing.T) {
	files := []muster.FileStat{{Path: "a.txt", Added: 2, Deleted: 1}, {Path: "dir/b.go", Added: 1}}
	want := "a.txt | +2 -1\ndir/b.go | +1 -0\n2 files changed, +3 -1"
	if got := diffStat(files); got != want {
		t.Errorf("diffStat:\n got %q\nwant %q", got, want)
	}
	if got := diffStat(nil); got != "" {
		t.Errorf("diffStat of nothing: %q", got)
	}
}

func TestPromptHead(t *testing.T) {
	p := "# Task a\n\n## Notes\n" + strings.Repeat("x", 20000) + "\n## Fix round 2\nwhy\n"
	if got := promptHead(p); !strings.HasPrefix(got, "## Fix round 2\nwhy") {
		t.Errorf("a fix round keeps its reasons: %.40q", got)
	}
	if got := promptHead("# Task a\n" + strings.Repeat("y", 20000)); len(got) > maxLogPrompt+10 || !strings.HasPrefix(got, "# Task a") {
		t.Errorf("the head is bounded: %d bytes", len(got))
	}
}
