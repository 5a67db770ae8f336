package planner

import (
	"fmt"
	"strings"

	"github.com/muster-run/muster"
)

// Summary is what a plan promises, for people: its size, its longest
// chain, how much of it can run at once on the crew, and what its
// budgets say it may cost.
type Summary struct {
	Tasks int `json:"tasks"`
	// CriticalPath is the longest chain of After edges, first task first.
	CriticalPath []muster.TaskID `json:"critical_path"`
	// Width is the most tasks that may run at once by the graph: the
	// largest set of tasks at the same depth.
	Width int `json:"width"`
	// Clones is how many coders the crew runs at once (coder clones,
	// capped by max_parallel); 0 when no crew is configured.
	Clones int `json:"clones"`
	// AtOnce is the smaller of Width and Clones (Width without a crew).
	AtOnce int `json:"at_once"`
	// BudgetUSD sums the tasks' Budget: dollars; Budgeted counts those
	// tasks. RunBudgetUSD is [run] budget_usd (0: none).
	BudgetUSD    float64 `json:"budget_usd"`
	Budgeted     int     `json:"budgeted"`
	RunBudgetUSD float64 `json:"run_budget_usd"`
}

// CoderClones returns how many coder clones of cfg may work at once:
// the clones of every executor with the coder role, capped by
// max_parallel and by writers (tasks in a plan write, by default).
func CoderClones(cfg *muster.Config) int {
	if cfg == nil {
		return 0
	}
	n := 0
	for _, e := range cfg.Executors {
		if e.HasRole(muster.RoleCoder) {
			n += max(e.Clones, 1)
		}
	}
	if cfg.Run.MaxParallel > 0 && cfg.Run.MaxParallel < n {
		n = cfg.Run.MaxParallel
	}
	if cfg.Run.Writers > 0 && cfg.Run.Writers < n {
		n = cfg.Run.Writers // single-writer mode: one writing task at a time
	}
	return n
}

// Summarize sums up a valid plan (no cycles) for the crew of cfg.
func Summarize(p *muster.Plan, cfg *muster.Config) Summary {
	s := Summary{Tasks: len(p.Tasks), Clones: CoderClones(cfg)}
	byID := map[muster.TaskID]*muster.Task{}
	for _, t := range p.Tasks {
		byID[t.ID] = t
	}
	// depth: the longest chain of open tasks that ends at a task; prev:
	// the dependency it comes through. Memoised, with a guard so that a
	// cycle (never in a valid plan) cannot recurse for ever.
	depth := map[muster.TaskID]int{}
	prev := map[muster.TaskID]muster.TaskID{}
	visiting := map[muster.TaskID]bool{}
	var walk func(id muster.TaskID) int
	walk = func(id muster.TaskID) int {
		if d, ok := depth[id]; ok {
			return d
		}
		t := byID[id]
		if t == nil || t.Done || visiting[id] {
			return 0
		}
		visiting[id] = true
		best := 0
		for _, dep := range t.After {
			if d := walk(dep); d > best {
				best, prev[id] = d, dep
			}
		}
		visiting[id] = false
		depth[id] = best + 1
		return best + 1
	}
	var end muster.TaskID
	levels := map[int]int{}
	for _, t := range p.Tasks {
		if t.Done {
			continue
		}
		d := walk(t.ID)
		levels[d]++
		if d > depth[end] || end == "" {
			end = t.ID
		}
		if t.Budget.USDMicros > 0 {
			s.BudgetUSD += float64(t.Budget.USDMicros) / 1e6
			s.Budgeted++
		}
	}
	for id := end; id != ""; id = prev[id] {
		s.CriticalPath = append([]muster.TaskID{id}, s.CriticalPath...)
	}
	for _, n := range levels {
		s.Width = max(s.Width, n)
	}
	s.AtOnce = s.Width
	if s.Clones > 0 {
		s.AtOnce = min(s.Width, s.Clones)
	}
	if cfg != nil {
		s.RunBudgetUSD = float64(cfg.Run.BudgetUSDMicros) / 1e6
	}
	return s
}

// Lines returns the summary as lines for people.
func (s Summary) Lines() []string {
	path := make([]string, len(s.CriticalPath))
	for i, id := range s.CriticalPath {
		path[i] = string(id)
	}
	out := []string{
		fmt.Sprintf("tasks          %d", s.Tasks),
		fmt.Sprintf("critical path  %d tasks: %s", len(path), strings.Join(path, " -> ")),
	}
	if s.Clones > 0 {
		coders := "coders"
		if s.Clones == 1 {
			coders = "coder"
		}
		out = append(out, fmt.Sprintf("at once        %d (the graph allows %d; the crew runs %d %s at once)", s.AtOnce, s.Width, s.Clones, coders))
	} else {
		out = append(out, fmt.Sprintf("at once        up to %d by the graph (no crew configured)", s.Width))
	}
	switch {
	case s.Budgeted == s.Tasks && s.Tasks > 0:
		out = append(out, fmt.Sprintf("expected cost  at most $%.2f (every task has a Budget)", s.BudgetUSD))
	case s.Budgeted > 0:
		out = append(out, fmt.Sprintf("expected cost  at most $%.2f for the %d of %d tasks with a Budget; the others have none", s.BudgetUSD, s.Budgeted, s.Tasks))
	case s.RunBudgetUSD > 0:
		out = append(out, fmt.Sprintf("expected cost  no task has a Budget; the run stops at budget_usd $%.2f", s.RunBudgetUSD))
	default:
		out = append(out, "expected cost  unknown: no task has a Budget and the run has no budget_usd")
	}
	return out
}
