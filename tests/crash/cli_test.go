package crash

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster/journal"
)

func TestSecondProcessCannotDriveTheRun(t *testing.T) {
	repo, plan, cfg, _ := setup(t, 6)
	r := runMuster(t, repo, []string{"MUSTER_CRASH_AT=TaskSucceeded:2"}, 0, "run", plan, "--config", cfg, "--run-id", "sealed", "--plain")
	if !r.killed {
		t.Fatalf("run with a crash point: exit %d\n%s", r.code, r.stderr)
	}
	dir := filepath.Join(repo, ".git", "muster", "runs", "sealed")
	// Hold the run's lock as a live muster process would.
	j, _, err := journal.Open(filepath.Join(dir, journal.FileName), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	r = runMuster(t, repo, nil, 0, "resume", "sealed")
	if r.code != 3 || !strings.Contains(r.stderr, "being driven by another muster process") {
		t.Errorf("resume of a held run: exit %d, want 3 and a clear message\n%s", r.code, r.stderr)
	}
	r = runMuster(t, repo, nil, 0, "verify", "sealed")
	if r.code != 3 {
		t.Errorf("verify of a held run: exit %d, want 3\n%s", r.code, r.stderr)
	}
	j.Close()
	if r := runMuster(t, repo, nil, 0, "resume", "sealed"); r.code != 0 {
		t.Errorf("resume once the lock is free: exit %d\n%s", r.code, r.stderr)
	}
}

func writeFile(t *testing.T, p, body string) string {
	t.Helper()
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUnapprovedAuthorityRefusesToStart(t *testing.T) {
	repo, _, cfg, pids := setup(t, 1)
	side := filepath.Dir(cfg)
	plan := writeFile(t, filepath.Join(side, "shell.md"), "# Plan: shell\n\n"+
		"## [ ] a: Needs a shell\nOwns: out/a/\nAuthority: shell\n\nDEPS:\n\n"+
		"## [ ] b: Reads\nOwns: out/b/\nAuthority: read\nAfter: a\n\nDEPS: a\n")
	r := runMuster(t, repo, nil, 0, "run", plan, "--config", cfg, "--plain")
	if r.code != 2 {
		t.Fatalf("run with an unapproved authority: exit %d, want 2\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, `shell.md:5: task a requests authority "shell"`) || !strings.Contains(r.stderr, "--approve shell") {
		t.Errorf("the refusal does not list what to approve:\n%s", r.stderr)
	}
	if _, err := os.Stat(pids); err == nil {
		t.Error("an agent ran although the run was refused")
	}
	// require_approval adds authorities; --approve grants them.
	strict := writeFile(t, filepath.Join(side, "strict.toml"), mustRead(t, cfg)+"\n")
	strictTOML := strings.Replace(mustRead(t, strict), "[run]\n", "[run]\nrequire_approval = [\"read\"]\n", 1)
	writeFile(t, strict, strictTOML)
	r = runMuster(t, repo, nil, 0, "run", plan, "--config", strict, "--approve", "shell", "--plain")
	if r.code != 2 || !strings.Contains(r.stderr, `task b requests authority "read"`) || strings.Contains(r.stderr, `task a requests`) {
		t.Fatalf("require_approval: exit %d\n%s", r.code, r.stderr)
	}
	r = runMuster(t, repo, nil, 0, "run", plan, "--config", strict, "--approve", "shell", "--approve", "read", "--plain")
	if r.code != 0 {
		t.Fatalf("approved run: exit %d\n%s", r.code, r.stderr)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
