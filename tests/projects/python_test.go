package projects_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

// A Python project with a pytest suite (Debian's python3-pytest), one of
// whose tests already fails on the base, a conftest.py that writes a
// file and no .gitignore (__pycache__/ lands in the worktree): a task
// that breaks another test is charged and does not land; a task that
// breaks nothing lands, and what pytest writes never fails its round.
func TestPythonProjectWithAFailingTestOnTheBase(t *testing.T) {
	if _, err := os.Stat("/usr/bin/pytest-3"); err != nil {
		need(t, "pytest-3", "apt-get install python3-pytest")
	}
	repo := project(t, map[string]string{
		"calc.py":            "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b + 1  # wrong on the base\n",
		"conftest.py":        "with open('conftest-out.txt', 'w') as f:\n    f.write('collected\\n')\n",
		"tests/test_calc.py": "import calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n\n\ndef test_sub():\n    assert calc.sub(5, 3) == 2\n\n\ndef test_mul():\n    assert calc.mul(2, 3) == 6\n",
		"pytest.ini":         "[pytest]\npythonpath = .\n",
	})
	commit(t, repo, "calc")
	toml := muInit(t, repo)
	if !strings.Contains(toml, `pytest = "pytest`) {
		t.Fatalf("muster init wrote:\n%s", toml)
	}
	agent := `case "$MUSTER_TASK_ID" in
breaks) sed -i 's/return a - b/return a + b/' calc.py ;;
notes) echo "notes" > NOTES.md ;;
esac
echo done`
	if err := os.WriteFile(filepath.Join(repo, "muster.toml"), []byte(withExecutor(t, toml, agent)), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := "# Plan: py\n\n## [ ] breaks: Change sub\nOwns: calc.py\nReview: none\n\nChange sub.\n\n## [ ] notes: Write notes\nOwns: NOTES.md\nReview: none\n\nWrite NOTES.md.\n"
	if err := os.WriteFile(filepath.Join(repo, "py.md"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	commit(t, repo, "plan")
	code, evs, errOut := run(t, repo, "py.md", "py-1")
	final := map[muster.TaskID]muster.Event{}
	for _, e := range evs {
		switch e.Type {
		case muster.EvTaskFailed, muster.EvTaskSucceeded, muster.EvTaskCancelled:
			final[e.Task] = e
		case muster.EvViolation:
			t.Errorf("violation in %s round %d: %v", e.Task, e.Round, e.Paths)
		}
	}
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a task failed)\n%s", code, errOut)
	}
	if b := final["breaks"]; b.Type != muster.EvTaskFailed || !strings.Contains(b.Reason, "tests/test_calc.py::test_sub") {
		t.Errorf("breaks: %s %q", b.Type, b.Reason)
	}
	if n := final["notes"]; n.Type != muster.EvTaskSucceeded {
		t.Errorf("notes: %s %q", n.Type, n.Reason)
	}
	branch := "muster/py-1"
	if diff := strings.TrimSpace(sh(t, repo, "git", "diff", "--name-only", "main", branch)); diff != "NOTES.md" {
		t.Errorf("the run branch changed %q, want NOTES.md only", diff)
	}
	var warned bool
	for _, e := range evs {
		if e.Type == muster.EvWarning && strings.Contains(e.Message, "gate pytest") && strings.Contains(e.Message, "fails on the base commit before any task") && strings.Contains(e.Message, "test_mul") {
			warned = true
		}
	}
	if !warned {
		t.Error("no warning at the start that pytest fails on the base (test_mul)")
	}
}
