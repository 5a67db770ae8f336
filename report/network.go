package report

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/textsafe"
)

// Observed is the usage of one agent clone on one task as the provider
// reported it in the responses muster forwarded, beside what the agent
// claimed (docs/usage.md).
type Observed struct {
	Run  string        `json:"run"`
	Task muster.TaskID `json:"task"`
	// Clone is "executor#n".
	Clone string `json:"clone"`
	// ProviderTokens is what the provider reported; ClaimedTokens what
	// the agent said.
	ProviderTokens int64 `json:"provider_tokens"`
	ClaimedTokens  int64 `json:"claimed_tokens"`
	// Available is false when a response carried no usage fields (the
	// agent's numbers counted then).
	Available bool `json:"available"`
}

// Blocked is one request muster refused an invocation (a Blocked event).
type Blocked struct {
	Run     string        `json:"run"`
	Task    muster.TaskID `json:"task"`
	Attempt int           `json:"attempt"`
	Clone   string        `json:"clone,omitempty"`
	Host    string        `json:"host"`
	Reason  string        `json:"reason,omitempty"`
}

// network folds one run's Blocked events and the provider's usage beside
// the agents' claims into r.
func (r *Report) network(run string, events []muster.Event) {
	type key struct {
		task  muster.TaskID
		clone string
	}
	obs := map[key]*Observed{}
	var order []key
	get := func(e *muster.Event) *Observed {
		k := key{e.Task, e.Slot()}
		o := obs[k]
		if o == nil {
			o = &Observed{Run: run, Task: e.Task, Clone: e.Slot(), Available: true}
			obs[k] = o
			order = append(order, k)
		}
		return o
	}
	seen := map[key]bool{} // clones behind the endpoint
	for i := range events {
		e := &events[i]
		switch {
		case e.Type == muster.EvBlocked:
			r.Blocked = append(r.Blocked, Blocked{Run: run, Task: e.Task, Attempt: e.Attempt, Clone: e.Slot(), Host: e.BlockedHost(), Reason: e.Reason})
		case e.Type == muster.EvTokensUsed && e.Source == muster.UsageProvider:
			o := get(e)
			seen[key{e.Task, e.Slot()}] = true
			o.ProviderTokens = muster.SatAdd(o.ProviderTokens, e.Credited().Tokens())
			if e.Reason == muster.UsageUnavailable {
				o.Available = false
			}
		case e.Type == muster.EvTokensUsed:
			o := get(e)
			o.ClaimedTokens = muster.SatAdd(o.ClaimedTokens, e.Credited().Tokens())
		}
	}
	for _, k := range order {
		if seen[k] {
			r.Observed = append(r.Observed, *obs[k])
		}
	}
}

// writeNetwork writes the provider's usage beside the agents' claims and
// the refused requests, for people.
func writeNetwork(w io.Writer, r *Report) error {
	if len(r.Observed) > 0 {
		fmt.Fprintf(w, "\nProvider usage (what muster saw on the wire; it counts for budgets) beside the agents' claims\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "Task\tClone\tProvider\tAgent claimed\t\n")
		for _, o := range r.Observed {
			prov := num(o.ProviderTokens)
			if !o.Available {
				prov = muster.UsageUnavailable
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", textsafe.Sanitize(string(o.Task)), textsafe.Sanitize(o.Clone), prov, num(o.ClaimedTokens))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Blocked) > 0 {
		fmt.Fprintf(w, "\nNetwork refused (%d; allow a host with allow_hosts)\n", len(r.Blocked))
		sort.SliceStable(r.Blocked, func(i, j int) bool { return r.Blocked[i].Run < r.Blocked[j].Run })
		for _, b := range r.Blocked {
			fmt.Fprintf(w, "  %s %s#%d %s: %s", textsafe.Sanitize(b.Run), textsafe.Sanitize(string(b.Task)), b.Attempt, textsafe.Sanitize(b.Clone), textsafe.Sanitize(b.Host))
			if b.Reason != "" {
				fmt.Fprintf(w, " (%s)", textsafe.Sanitize(b.Reason))
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}
