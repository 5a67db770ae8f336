package driver

import (
	"strings"
	"testing"
)

func TestDiffStat(t *testing.T) {
	diff := "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n-old\n+new\n+more\n" +
		"diff --git a/dir/b.go b/dir/b.go\nnew file mode 100644\n--- /dev/null\n+++ b/dir/b.go\n@@ -0,0 +1 @@\n+package b\n"
	want := "a.txt | +2 -1\ndir/b.go | +1 -0\n2 files changed, +3 -1"
	if got := diffStat(diff); got != want {
		t.Errorf("diffStat:\n got %q\nwant %q", got, want)
	}
	if got := diffStat(""); got != "" {
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
