package egress

import (
	"fmt"
	"sync"

	"github.com/muster-run/muster"
)

// Ledger is the run's budget as the model endpoints see it: what the run
// has spent, from the journal as it is applied (Observe). Once it is
// spent, every endpoint of the run answers new model requests with 429.
type Ledger struct {
	limitMicros, limitTokens int64
	// own: the ledger of one fleet job, which counts its endpoint's
	// responses itself (count), priced with price; a run's ledger is
	// told what the journal counted (Observe).
	own   bool
	price func(string, muster.Usage) (int64, bool)

	mu    sync.Mutex
	spent muster.Usage
}

// JobLedger returns the ledger of one invocation given what is left of
// the run's budget (a fleet job's: nil when the run has none): its
// endpoint counts the invocation's own responses against it, priced
// with price where the provider gave no cost.
func JobLedger(left *muster.Budget, price func(string, muster.Usage) (int64, bool)) *Ledger {
	if left == nil || left.IsZero() {
		return nil
	}
	return &Ledger{limitMicros: left.USDMicros, limitTokens: left.Tokens, own: true, price: price}
}

// Left is what is left of the budget (nil: the run has none); a spent
// budget leaves 1 of its unit, so that it still stops a job.
func (l *Ledger) Left() *muster.Budget {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var b muster.Budget
	if l.limitMicros > 0 {
		b.USDMicros = max(l.limitMicros-l.spent.CostMicros, 1)
	}
	if l.limitTokens > 0 {
		b.Tokens = max(l.limitTokens-l.spent.Tokens(), 1)
	}
	return &b
}

// count adds one response's usage to a job's ledger (a run's ledger
// learns it from the journal instead).
func (l *Ledger) count(model string, u muster.Usage) {
	if l == nil || !l.own {
		return
	}
	if u.CostMicros == 0 && l.price != nil && u.Tokens() > 0 {
		if c, ok := l.price(model, u); ok {
			u.CostMicros = c
		}
	}
	l.mu.Lock()
	l.spent.Add(u)
	l.mu.Unlock()
}

// NewLedger returns the ledger of a run with the budget of run; nil when
// the run has none.
func NewLedger(run muster.RunConfig) *Ledger {
	if run.BudgetUSDMicros <= 0 && run.BudgetTokens <= 0 {
		return nil
	}
	return &Ledger{limitMicros: run.BudgetUSDMicros, limitTokens: run.BudgetTokens}
}

// Observe records what the run has spent so far (its counted usage).
func (l *Ledger) Observe(spent muster.Usage) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.spent = spent
	l.mu.Unlock()
}

// Spent says why the run's budget is spent ("" while it is not).
func (l *Ledger) Spent() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	what := "the run's budget"
	if l.own {
		what = "what was left of the run's budget for this job"
	}
	if l.limitMicros > 0 && l.spent.CostMicros >= l.limitMicros {
		return fmt.Sprintf("%s, %s, is spent (%s)", what, muster.FormatUSD(l.limitMicros), muster.FormatUSD(l.spent.CostMicros))
	}
	if l.limitTokens > 0 && l.spent.Tokens() >= l.limitTokens {
		return fmt.Sprintf("%s, %d tokens, is spent (%d)", what, l.limitTokens, l.spent.Tokens())
	}
	return ""
}
