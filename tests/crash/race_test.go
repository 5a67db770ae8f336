package crash

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/journal"
)

// kill -9 in the middle of a race (right after a candidate's
// CandidateFinished is written, while another still works), then resume:
// the race finishes once, keeping the candidates that had finished (they
// are not started again), exactly one commit of the task lands, and
// verify holds.
func TestKilledMidRaceFinishesItOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: builds muster and runs it several times")
	}
	side := t.TempDir()
	agent := filepath.Join(side, "agent.sh")
	script := "#!/bin/sh\ncase \"$MUSTER_EXECUTOR\" in\n" +
		"a) printf 'good\\nmore\\n' > out.txt ;;\n" +
		"b) echo good > out.txt ;;\n" +
		"c) sleep 2; printf 'good\\nmore\\nmore\\n' > out.txt ;;\nesac\n"
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var toml strings.Builder
	for _, n := range []string{"a", "b", "c"} {
		fmt.Fprintf(&toml, "[executors.%s]\nkind = \"command\"\nclones = 1\ncommand = [%q]\n\n", n, agent)
	}
	cfg := filepath.Join(side, "muster.toml")
	if err := os.WriteFile(cfg, []byte(toml.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(side, "plan.md")
	if err := os.WriteFile(plan, []byte("# Plan: race\n\n## [ ] r: Race\nOwns: out.txt\nRace: 3\nGate: grep -qx good out.txt\n\nWrite good.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repo := newRepo(t, map[string]string{"README.md": "race test\n"})
	jpath := filepath.Join(repo, ".git", "muster", "runs", "race", journal.FileName)
	r := runMuster(t, repo, []string{"MUSTER_CRASH_AT=CandidateFinished:1"}, 0, "run", plan, "--config", cfg, "--run-id", "race", "--plain")
	if !r.killed {
		t.Fatalf("not killed mid-race: exit %d\n%s", r.code, r.stderr)
	}
	for i := 0; r.code != 0 && i < 3; i++ {
		r = runMuster(t, repo, nil, 0, "resume", "race", "--plain")
	}
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	events, err := journal.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := engine.Replay(events)
	if err != nil || st.RunState != muster.RunSucceeded {
		t.Fatalf("replay: %v %v", err, st)
	}
	var starts [][]muster.RaceCandidate
	won := 0
	for _, e := range events {
		switch e.Type {
		case muster.EvRaceStarted:
			starts = append(starts, e.Race)
		case muster.EvRaceWon:
			won++
		}
	}
	if len(starts) != 2 || len(starts[0]) != 3 || len(starts[1]) >= 3 || won != 1 {
		t.Fatalf("race starts %v, %d winners: want the resume to start only the unfinished candidates, one winner", starts, won)
	}
	if got := git(t, repo, "rev-list", "--count", "main..muster/race"); strings.TrimSpace(got) != "1" {
		t.Fatalf("%s commits on the run branch, want 1", got)
	}
	if v := runMuster(t, repo, nil, 0, "verify", "race"); v.code != 0 {
		t.Errorf("verify: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
}
