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

	mu    sync.Mutex
	spent muster.Usage
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
	if l.limitMicros > 0 && l.spent.CostMicros >= l.limitMicros {
		return fmt.Sprintf("the run's budget of %s is spent (%s)", muster.FormatUSD(l.limitMicros), muster.FormatUSD(l.spent.CostMicros))
	}
	if l.limitTokens > 0 && l.spent.Tokens() >= l.limitTokens {
		return fmt.Sprintf("the run's budget of %d tokens is spent (%d)", l.limitTokens, l.spent.Tokens())
	}
	return ""
}
