package muster_test

import (
	"reflect"
	"testing"

	"github.com/muster-run/muster"
)

func TestPatchStat(t *testing.T) {
	t.Parallel()
	patch := "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n-old\n+new\n+more\n" +
		"diff --git a/dir/b.go b/dir/b.go\nnew file mode 100644\n--- /dev/null\n+++ b/dir/b.go\n@@ -0,0 +1 @@\n+package b\n" +
		"diff --git a/bin b/bin\nBinary files a/bin and b/bin differ\n"
	want := []muster.FileStat{{Path: "a.txt", Added: 2, Deleted: 1}, {Path: "dir/b.go", Added: 1}, {Path: "bin"}}
	if got := muster.PatchStat(patch); !reflect.DeepEqual(got, want) {
		t.Errorf("PatchStat:\n got %+v\nwant %+v", got, want)
	}
	if got := muster.PatchStat(""); got != nil {
		t.Errorf("PatchStat of nothing: %+v", got)
	}
}
