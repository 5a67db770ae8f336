package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

func raceJournal(run, winner string) []muster.Event {
	t := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	yes, no := true, false
	cands := []muster.RaceCandidate{{Executor: "claude", Clone: 1, Attempt: 1}, {Executor: "codex", Clone: 1, Attempt: 2}, {Executor: "gemini", Clone: 1, Attempt: 3}}
	win := map[string]int{"claude": 1, "codex": 2}[winner]
	evs := []muster.Event{
		{Type: muster.EvRunStarted, Run: run},
		{Type: muster.EvRaceStarted, Task: "r", Attempt: 1, Race: cands},
		{Type: muster.EvTaskStarted, Task: "r", Attempt: 3, Executor: "claude", Clone: 1},
	}
	for i, c := range cands {
		evs = append(evs, muster.Event{Type: muster.EvTokensUsed, Task: "r", Attempt: c.Attempt, Executor: c.Executor, Clone: 1,
			Usage: muster.Usage{InputTokens: 100, CostMicros: int64(i+1) * 100_000}})
		passed := c.Executor != "gemini"
		evs = append(evs, muster.Event{Type: muster.EvGateRan, Task: "r", Attempt: c.Attempt, Gate: "test", Passed: map[bool]*bool{true: &yes, false: &no}[passed]})
		ev := muster.Event{Type: muster.EvCandidateFinished, Task: "r", Attempt: c.Attempt, Executor: c.Executor, Clone: 1, Passed: map[bool]*bool{true: &yes, false: &no}[passed]}
		if passed {
			ev.Stat = &muster.DiffStat{Added: 3 * (i + 1), Files: 1}
		} else {
			ev.Reason = "gate test failed"
		}
		evs = append(evs, ev)
	}
	evs = append(evs,
		muster.Event{Type: muster.EvTokensUsed, Task: "r", Executor: "rev", Clone: 1, Role: muster.RoleReviewer, Usage: muster.Usage{InputTokens: 10, CostMicros: 50_000}},
		muster.Event{Type: muster.EvRaceWon, Task: "r", Attempt: win, Executor: winner, Clone: 1, State: muster.RaceJudge, Judge: "rev#1", Reason: "clearer"},
		muster.Event{Type: muster.EvTaskSucceeded, Task: "r", Attempt: win, Commit: "c"},
		muster.Event{Type: muster.EvRunFinished, State: muster.RunSucceeded})
	for i := range evs {
		evs[i].Seq, evs[i].Time = int64(i+1), t.Add(time.Duration(i)*time.Second)
	}
	return evs
}

// Each race's candidates (executor, cost, gates, verdict), its winner
// and total; each executor's win rate across runs.
func TestReportRaces(t *testing.T) {
	r := Build([][]muster.Event{raceJournal("one", "claude"), raceJournal("two", "codex")}, Options{})
	if len(r.Races) != 2 {
		t.Fatalf("races %+v", r.Races)
	}
	one := r.Races[0]
	if one.Winner != "claude#1" || one.How != muster.RaceJudge || one.Judge != "rev#1" || one.CostMicros != 650_000 {
		t.Fatalf("race %+v", one)
	}
	c := one.Candidates
	if len(c) != 3 || c[0].Verdict != "won" || c[1].Verdict != "lost" || c[2].Verdict != "out" || c[2].Reason != "gate test failed" ||
		c[1].CostMicros != 200_000 || c[0].GatesPassed != 1 || c[2].GatesFailed != 1 || c[1].Added != 6 {
		t.Fatalf("candidates %+v", c)
	}
	want := []WinRate{{"claude", 2, 1, 0.5}, {"codex", 2, 1, 0.5}, {"gemini", 2, 0, 0}}
	if len(r.WinRates) != 3 || r.WinRates[0] != want[0] || r.WinRates[1] != want[1] || r.WinRates[2] != want[2] {
		t.Fatalf("win rates %+v", r.WinRates)
	}
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Race of r in run one, won by claude#1 (judge, judge rev#1): clearer; total $0.65", "gemini#1", "out: gate test failed", "Race win rate by executor", "claude  1 of 2  50%"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("missing %q in:\n%s", s, b.String())
		}
	}
	b.Reset()
	if err := WriteJSON(&b, r); err != nil || !strings.Contains(b.String(), `"winner": "codex#1"`) || !strings.Contains(b.String(), `"race_win_rates"`) {
		t.Fatalf("json %v:\n%s", err, b.String())
	}
}
