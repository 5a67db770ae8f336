package engine

import (
	"fmt"

	"github.com/muster-run/muster"
)

// BudgetWarnReason marks the Warning event that says the run has spent
// 80 % of a budget; the state remembers it so that it is said once.
const BudgetWarnReason = "budget-80"

// BudgetWarnPercent is when the run warns about its budget.
const BudgetWarnPercent = 80

// Expected returns what a task is expected to spend: its own budget where
// it sets one, else the average of the tasks that succeeded so far (zero
// before the first one).
func (s *State) Expected(t *muster.Task) (micros, tokens int64) {
	micros, tokens = t.Budget.USDMicros, t.Budget.Tokens
	if s.doneCount > 0 {
		if micros == 0 {
			micros = s.doneUsage.CostMicros / int64(s.doneCount)
		}
		if tokens == 0 {
			tokens = s.doneUsage.Tokens() / int64(s.doneCount)
		}
	}
	return micros, tokens
}

// Reserved returns what the running tasks are expected to spend still:
// for each, its expected cost less what its attempt has spent already.
func (s *State) Reserved() (micros, tokens int64) {
	for _, id := range s.Order {
		t := s.Tasks[id]
		if t.State != muster.StateRunning {
			continue
		}
		m, k := s.Expected(t.Task)
		if n := t.racing(); n > 1 {
			// A race reserves for each candidate still running.
			m, k = m*int64(n), k*int64(n)
		}
		micros += max(m-t.AttemptUsage.CostMicros, 0)
		tokens += max(k-t.AttemptUsage.Tokens(), 0)
	}
	return micros, tokens
}

// budgetRefusal says why a task may not start when what is reserved
// (rm micro-dollars, rk tokens: the running tasks' Reserved plus what
// this decision has started) and what the task is expected to spend, on
// top of what is spent, do not fit in the run's budget; "" when they fit.
func (s *State) budgetRefusal(t *muster.Task, rm, rk int64) string {
	run := s.Config.Run
	if run.BudgetUSDMicros == 0 && run.BudgetTokens == 0 {
		return ""
	}
	m, k := s.Expected(t)
	if lim := run.BudgetUSDMicros; lim > 0 {
		spent := s.Usage.CostMicros
		if spent >= lim || spent+rm+m > lim {
			return fmt.Sprintf("budget: not started: %s spent and %s reserved of %s leave too little (a task is expected to cost %s)",
				usd(spent), usd(rm), usd(lim), usd(m))
		}
	}
	if lim := run.BudgetTokens; lim > 0 {
		spent := s.Usage.Tokens()
		if spent >= lim || spent+rk+k > lim {
			return fmt.Sprintf("budget: not started: %d tokens spent and %d reserved of %d leave too little (a task is expected to use %d)",
				spent, rk, lim, k)
		}
	}
	return ""
}

// OverBudget says whether the running attempt of a task, or the run, has
// spent more than its budget; "" when neither has. The driver asks after
// each TokensUsed event and cancels the attempt (or every attempt) with
// muster.ErrBudget.
func (s *State) OverBudget(id muster.TaskID) (reason string, wholeRun bool) {
	if s.Config != nil {
		run := s.Config.Run
		if lim := run.BudgetUSDMicros; lim > 0 && s.Usage.CostMicros > lim {
			return fmt.Sprintf("budget: the run spent %s of %s", usd(s.Usage.CostMicros), usd(lim)), true
		}
		if lim := run.BudgetTokens; lim > 0 && s.Usage.Tokens() > lim {
			return fmt.Sprintf("budget: the run spent %d tokens of %d", s.Usage.Tokens(), lim), true
		}
	}
	t := s.Tasks[id]
	if t == nil || t.State != muster.StateRunning {
		return "", false
	}
	b := t.Task.Budget
	if n := int64(t.raceSize()); n > 1 {
		// Budget: is each candidate's: a race of N may spend N of it
		// (the judge's share included), whichever have finished.
		b.USDMicros, b.Tokens = b.USDMicros*n, b.Tokens*n
	}
	if b.USDMicros > 0 && t.AttemptUsage.CostMicros > b.USDMicros {
		return fmt.Sprintf("budget: task %s spent %s of its %s", id, usd(t.AttemptUsage.CostMicros), usd(b.USDMicros)), false
	}
	if b.Tokens > 0 && t.AttemptUsage.Tokens() > b.Tokens {
		return fmt.Sprintf("budget: task %s spent %d tokens of its %d", id, t.AttemptUsage.Tokens(), b.Tokens), false
	}
	return "", false
}

// BudgetWarning returns the message of the 80 % warning when the run has
// just reached it and has not said it yet; "" otherwise.
func (s *State) BudgetWarning() string {
	if s.budgetWarned || s.Config == nil {
		return ""
	}
	run := s.Config.Run
	if lim := run.BudgetUSDMicros; lim > 0 && s.Usage.CostMicros*100 >= lim*BudgetWarnPercent {
		return fmt.Sprintf("budget: the run has spent %s, %d%% of its %s", usd(s.Usage.CostMicros), s.Usage.CostMicros*100/lim, usd(lim))
	}
	if lim := run.BudgetTokens; lim > 0 && s.Usage.Tokens()*100 >= lim*BudgetWarnPercent {
		return fmt.Sprintf("budget: the run has used %d tokens, %d%% of its %d", s.Usage.Tokens(), s.Usage.Tokens()*100/lim, lim)
	}
	return ""
}

func usd(micros int64) string { return muster.FormatUSDPrecise(micros) }
