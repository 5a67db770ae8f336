package tmux_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goalRepo makes a repository whose crew has a scripted planner and a
// coder, both command executors.
func goalRepo(t *testing.T, planKeys ...string) string {
	t.Helper()
	tmp := t.TempDir()
	gitconfig := filepath.Join(tmp, "gitconfig")
	if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", gitconfig)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("XDG_CACHE_HOME", filepath.Join(tmp, "cache"))
	repo := filepath.Join(tmp, "repo")
	files := map[string]string{
		"muster.toml": "[executors.planner]\nkind = \"command\"\ncommand = [\"./planner.sh\"]\nroles = [\"planner\"]\n\n" +
			"[executors.coder]\nkind = \"command\"\ncommand = [\"./coder.sh\"]\n",
		"planner.sh": "#!/bin/sh\nprintf '# Plan: one\\n\\n## [ ] only: Write only.txt\\nOwns: only.txt\\n" + strings.Join(planKeys, "") + "' > \"$MUSTER_PLAN_OUT\"\n",
		"coder.sh":   "#!/bin/sh\necho only > only.txt\n",
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

// On a terminal, run --goal shows the plan and asks; "n" runs nothing,
// "y" runs it.
func TestRunGoalAsks(t *testing.T) {
	needTmux(t)
	bin := buildMuster(t)
	repo := goalRepo(t)
	for _, c := range []struct {
		answer, want string
		ran          bool
	}{{"n", "not run; the plan is in", false}, {"y", "run goal-y: succeeded", true}} {
		name := "goal" + c.answer
		s := start(t, name, fmt.Sprintf("%s run --goal 'Write only.txt' --repo %s --plain --run-id goal-%s", bin, repo, c.answer))
		scr := s.waitUntil("the question", func(scr string) bool {
			return strings.Contains(scr, "run this plan now? [y/N]") || strings.Contains(scr, name+"-exited=")
		})
		if !strings.Contains(scr, "│ ## [ ] only: Write only.txt") || !strings.Contains(scr, "critical path") {
			t.Errorf("the plan and its summary are not shown before the question:\n%s", scr)
		}
		s.keys(c.answer, "Enter")
		end := s.waitUntil("the end", func(scr string) bool { return strings.Contains(scr, name+"-exited=") })
		if !strings.Contains(end, c.want) || !strings.Contains(end, name+"-exited=0") {
			t.Errorf("answer %s: want %q and exit 0:\n%s", c.answer, c.want, end)
		}
		err := exec.Command("git", "-C", repo, "rev-parse", "--verify", "-q", "muster/goal-"+c.answer).Run()
		if ran := err == nil; ran != c.ran {
			t.Errorf("answer %s: run branch exists %v, want %v", c.answer, ran, c.ran)
		}
	}
}

// On a terminal, run --goal --yes approves the tasks, not the commands
// the planner wrote (issue 21, item 12): it lists them and asks; "n"
// runs nothing, "y" runs the plan, its gate passing.
func TestRunGoalAsksForCommands(t *testing.T) {
	needTmux(t)
	bin := buildMuster(t)
	repo := goalRepo(t, "Gate: test -f only.txt\\n")
	for _, c := range []struct {
		answer, want string
		ran          bool
	}{{"n", "not run; the plan is in", false}, {"y", "run cmd-y: succeeded", true}} {
		name := "cmd" + c.answer
		s := start(t, name, fmt.Sprintf("%s run --goal 'Write only.txt' --yes --repo %s --plain --run-id cmd-%s", bin, repo, c.answer))
		scr := s.waitUntil("the question", func(scr string) bool {
			return strings.Contains(scr, "run these commands? [y/N]") || strings.Contains(scr, name+"-exited=")
		})
		if !strings.Contains(scr, "task only Gate: test -f only.txt") {
			t.Errorf("the commands are not listed before the question:\n%s", scr)
		}
		s.keys(c.answer, "Enter")
		end := s.waitUntil("the end", func(scr string) bool { return strings.Contains(scr, name+"-exited=") })
		if !strings.Contains(end, c.want) || !strings.Contains(end, name+"-exited=0") {
			t.Errorf("answer %s: want %q and exit 0:\n%s", c.answer, c.want, end)
		}
		err := exec.Command("git", "-C", repo, "rev-parse", "--verify", "-q", "muster/cmd-"+c.answer).Run()
		if ran := err == nil; ran != c.ran {
			t.Errorf("answer %s: run branch exists %v, want %v", c.answer, ran, c.ran)
		}
	}
}
