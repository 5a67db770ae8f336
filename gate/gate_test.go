package gate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

func TestGatePassFailTimeout(t *testing.T) {
	dir := t.TempDir()
	var r Runner
	if g := r.Run(context.Background(), dir, muster.GateSpec{Name: "ok", Command: "echo fine; pwd"}, 0); !g.Passed || !strings.Contains(g.Output, dir) {
		t.Fatalf("ok gate: %+v", g)
	}
	g := r.Run(context.Background(), dir, muster.GateSpec{Name: "bad", Command: "echo broken >&2; exit 2"}, 0)
	if g.Passed || g.ExitCode != 2 || !strings.Contains(g.Output, "broken") {
		t.Fatalf("bad gate: %+v", g)
	}
	g = Runner{Grace: 50 * time.Millisecond}.Run(context.Background(), dir, muster.GateSpec{Name: "slow", Command: "sleep 30"}, 100*time.Millisecond)
	if g.Passed || !strings.Contains(g.Output, "timed out") {
		t.Fatalf("slow gate: %+v", g)
	}
}

func TestOutputBounded(t *testing.T) {
	g := Runner{}.Run(context.Background(), t.TempDir(), muster.GateSpec{Command: "yes 0123456789 | head -n 100000; echo LAST"}, 0)
	if len(g.Output) > MaxOutput+100 || !strings.HasSuffix(g.Output, "LAST") || !strings.HasPrefix(g.Output, "[…output cut…]") {
		t.Fatalf("output %d bytes, tail %q", len(g.Output), g.Output[len(g.Output)-10:])
	}
}

func TestCodeExecutor(t *testing.T) {
	dir := t.TempDir()
	task := &muster.Task{ID: "gen", Kind: muster.KindCode, Run: "echo hi > out.txt"}
	var recs []muster.Record
	res, err := CodeExecutor{}.Execute(context.Background(), &muster.ExecRequest{Task: task, Dir: dir}, func(r muster.Record) { recs = append(recs, r) })
	if err != nil || res.ExitCode != 0 || len(recs) != 1 {
		t.Fatalf("%v %+v %v", err, res, recs)
	}
	task.Run = "exit 7"
	if _, err := (CodeExecutor{}).Execute(context.Background(), &muster.ExecRequest{Task: task, Dir: dir}, func(muster.Record) {}); err == nil {
		t.Fatal("want failure")
	}
}

// A gate with junit reads the reports it wrote this time only.
func TestJUnitReportsOfThisRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "reports"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "reports", "stale.xml"), []byte("<testsuite>stale</testsuite>"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := muster.GateSpec{Name: "t", Command: `echo '<testsuite><testcase name="x"><failure message="m"/></testcase></testsuite>' > reports/new.xml; exit 1`, JUnit: "reports/*.xml"}
	r := Runner{}.Run(context.Background(), dir, g, 0)
	if r.Passed || !strings.Contains(r.JUnit, `<failure message="m"/>`) || strings.Contains(r.JUnit, "stale") {
		t.Fatalf("%+v", r)
	}
}

// A gate's JUnit reports lie in the clone, which agents write: a FIFO or
// a link planted at a report's name is not read (and never blocks
// muster); a regular report is.
func TestJUnitFollowsNoLinkAndNeverBlocks(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("<secret/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := muster.GateSpec{Name: "t", Command: `mkdir -p r && mkfifo r/a.xml && ln -s ` + secret + ` r/b.xml && echo '<ok/>' > r/c.xml`, JUnit: "r/*.xml"}
	res := Runner{}.Run(context.Background(), dir, g, 0)
	if !res.Passed || strings.Contains(res.JUnit, "secret") || !strings.Contains(res.JUnit, "<ok/>") {
		t.Fatalf("%+v", res)
	}
}

// With TmpRoot each gate run gets a TMPDIR of its own, gone after it.
func TestGateTmpdirIsItsOwn(t *testing.T) {
	root := t.TempDir()
	r := Runner{TmpRoot: root}
	var seen []string
	for i := 0; i < 2; i++ {
		g := r.Run(context.Background(), t.TempDir(), muster.GateSpec{Name: "t", Command: `test -d "$TMPDIR" && touch "$TMPDIR/x" && echo "$TMPDIR"`}, 0)
		if !g.Passed || !strings.HasPrefix(strings.TrimSpace(g.Output), root) {
			t.Fatalf("%+v", g)
		}
		seen = append(seen, strings.TrimSpace(g.Output))
	}
	if seen[0] == seen[1] {
		t.Error("two gate runs shared a TMPDIR")
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Errorf("gate TMPDIRs left: %v", left)
	}
}
