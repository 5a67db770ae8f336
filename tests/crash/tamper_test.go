package crash

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sealedRun runs a small plan to the end and returns the repository and
// the run directory.
func sealedRun(t *testing.T) (repo, dir string) {
	repo, plan, cfg, _ := setup(t, 6)
	if r := runMuster(t, repo, nil, 0, "run", plan, "--config", cfg, "--run-id", "sealed", "--plain"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	dir = filepath.Join(repo, ".git", "muster", "runs", "sealed")
	if r := runMuster(t, repo, nil, 0, "verify"); r.code != 0 {
		t.Fatalf("verify of an untouched run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	return repo, dir
}

func verifyFails(t *testing.T, repo string, want ...string) {
	t.Helper()
	r := runMuster(t, repo, nil, 0, "verify", "sealed")
	if r.code != 1 {
		t.Fatalf("verify: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("verify output lacks %q:\n%s", w, r.stdout)
		}
	}
}

func TestVerifyNamesAnEditedJournalLine(t *testing.T) {
	repo, dir := sealedRun(t)
	p := filepath.Join(dir, "journal.jsonl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	// Make a failure look like... a cheaper run: change the cost on the
	// first usage line.
	n := 0
	for i, l := range lines {
		if strings.Contains(l, `"TokensUsed"`) {
			lines[i] = strings.Replace(l, `"input_tokens":100`, `"input_tokens":1`, 1)
			n = i + 1
			break
		}
	}
	if n == 0 {
		t.Fatal("no TokensUsed line in the journal")
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	verifyFails(t, repo, "journal line "+itoa(n)+": differs")
}

func TestVerifyNamesACutJournal(t *testing.T) {
	repo, dir := sealedRun(t)
	p := filepath.Join(dir, "journal.jsonl")
	b, _ := os.ReadFile(p)
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	kept := strings.Join(lines[:len(lines)-2], "")
	if err := os.WriteFile(p, []byte(kept), 0o644); err != nil {
		t.Fatal(err)
	}
	verifyFails(t, repo, "are missing")
}

func TestVerifyNamesARewrittenBranch(t *testing.T) {
	repo, _ := sealedRun(t)
	// Drop the last task's commit from the run branch.
	git(t, repo, "update-ref", "refs/heads/muster/sealed", "muster/sealed~1")
	verifyFails(t, repo, "the branch was moved or rewritten", "is not on the run branch")
}

func TestVerifyNamesAnAmendedCommit(t *testing.T) {
	repo, _ := sealedRun(t)
	// Rewrite the tip commit with the same message (and trailers).
	tree := git(t, repo, "rev-parse", "muster/sealed^{tree}")
	parent := git(t, repo, "rev-parse", "muster/sealed~1")
	msg := git(t, repo, "log", "-1", "--format=%B", "muster/sealed")
	task := strings.TrimSpace(git(t, repo, "log", "-1", "--format=%(trailers:key=Muster-Task,valueonly)", "muster/sealed"))
	cmd := []string{"commit-tree", tree, "-p", parent, "-m", "amended " + msg + "\n"}
	amended := git(t, repo, cmd...)
	git(t, repo, "update-ref", "refs/heads/muster/sealed", amended)
	// The rewritten commit claims the task by its trailer; the journal
	// does not record it, so it is named as foreign.
	verifyFails(t, repo, "its commit ", "is not on the run branch",
		"commit "+amended[:10]+" on the run branch (its trailer claims task "+task+") was not made by muster")
}

func TestVerifyNamesAChangedPlan(t *testing.T) {
	repo, dir := sealedRun(t)
	p := filepath.Join(dir, "plan.md")
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "Owns: out/t01/", "Owns: out/", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	verifyFails(t, repo, "plan: its hash is")
}

func TestVerifyNamesAnEditedReceipt(t *testing.T) {
	repo, dir := sealedRun(t)
	p := filepath.Join(dir, "receipt.json")
	b, _ := os.ReadFile(p)
	s := strings.Replace(string(b), `"state": "succeeded"`, `"state": "failed"`, 1)
	if s == string(b) {
		t.Fatal("no state in the receipt")
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	verifyFails(t, repo, "the receipt was edited")
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}
