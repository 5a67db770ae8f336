package driver

import (
	"testing"

	"github.com/muster-run/muster"
)

// A CLI agent's final answer carries the verdict as a JSON line; the
// first that names a winner counts.
func TestVerdictIn(t *testing.T) {
	v := verdictIn("I compared them.\n{\"type\":\"verdict\",\"winner\":\"\"}\n  {\"type\":\"verdict\",\"winner\":\"claude#1\",\"reason\":\"clearer\"}\n{\"type\":\"verdict\",\"winner\":\"codex#1\"}")
	if v == nil || v.Winner != "claude#1" || v.Reason != "clearer" {
		t.Fatalf("verdict %+v", v)
	}
	if verdictIn("no verdict here\n{\"type\":\"findings\"}") != nil {
		t.Fatal("a verdict from nothing")
	}
}

// diff --numstat's counts: header lines are not changes; a deleted line
// that starts with "--" is.
func TestDiffStatOf(t *testing.T) {
	diff := "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n keep\n--- was a dashed line\n+new\ndiff --git a/y b/y\nnew file mode 100644\n--- /dev/null\n+++ b/y\n@@ -0,0 +1 @@\n+y\n"
	if got := diffStatOf(diff); got != (muster.DiffStat{Added: 2, Deleted: 1, Files: 2}) {
		t.Fatalf("stat %+v", got)
	}
}
