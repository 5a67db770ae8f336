package receipt

import (
	"fmt"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/textsafe"
)

// maxLineReports bounds how many differing journal lines are named one by one.
const maxLineReports = 10

// Branch is what the run branch holds now.
type Branch struct {
	// Tip is the branch's commit; empty when the branch is gone.
	Tip string
	// Commits lists every commit on the branch since the base.
	Commits []Commit
}

// Commit is one commit on the run branch with the task its Muster-Task
// trailer names (empty: no trailer). The trailer is what the commit
// claims; the journal says which commits muster made.
type Commit struct {
	ID   string
	Task muster.TaskID
}

// Verify checks a receipt against the journal's bytes, the hash of the
// run's plan copy (empty: the copy is missing) and the run branch. It
// returns one sentence per difference; none means the receipt holds.
func Verify(r *Receipt, journal []byte, planHash string, b Branch) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if r.Version != Version {
		add("receipt: version %d, this muster reads version %d", r.Version, Version)
		return out
	}
	switch {
	case planHash == "":
		add("plan: the run's copy of the plan is missing or unreadable")
	case planHash != r.PlanHash:
		add("plan: its hash is %s, the receipt sealed %s (the plan was changed)", textsafe.Short(planHash), textsafe.Short(r.PlanHash))
	}
	out = append(out, verifyJournal(r, journal)...)
	events, _ := decode(journal)
	out = append(out, verifyBranch(r, b, events)...)
	return out
}

func verifyJournal(r *Receipt, journal []byte) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	c := ChainOf(journal)
	if tail := tornTail(journal); tail > 0 {
		add("journal: %d bytes after line %d are not a complete line (the receipt sealed none of them)", tail, c.Lines)
	}
	if msg := shifted(c.LineDigests, r.Journal.LineDigests); msg != "" {
		add("%s", msg)
		return out
	}
	n := min(c.Lines, r.Journal.Lines, len(r.Journal.LineDigests))
	var differ []int
	for i := 0; i < n; i++ {
		if c.LineDigests[i] != r.Journal.LineDigests[i] {
			differ = append(differ, i+1)
		}
	}
	for i, l := range differ {
		if i == maxLineReports {
			add("journal: %d more lines differ (lines %d to %d)", len(differ)-maxLineReports, l, differ[len(differ)-1])
			break
		}
		add("journal line %d: differs from the line the receipt sealed", l)
	}
	switch {
	case c.Lines < r.Journal.Lines:
		add("journal: %d lines, the receipt sealed %d (lines %d to %d are missing)", c.Lines, r.Journal.Lines, c.Lines+1, r.Journal.Lines)
	case c.Lines > r.Journal.Lines:
		add("journal: lines %d to %d were appended after the receipt was sealed", r.Journal.Lines+1, c.Lines)
	}
	if len(out) == 0 && c.Hash != r.Journal.Hash {
		add("receipt: journal hash %s does not match the journal's chain %s although every line matches (the receipt was edited)",
			textsafe.Short(r.Journal.Hash), textsafe.Short(c.Hash))
	}
	if len(out) > 0 {
		return out
	}
	// The journal is the sealed one: the outcomes in the receipt must be
	// the journal's.
	events, err := decode(journal)
	if err != nil {
		add("%v", err)
		return out
	}
	f := Fold(events)
	if f.Run != r.Run || f.Base != r.Base || f.Branch != r.Branch || f.State != r.State {
		add("receipt: run %s, base %s, branch %s, state %s; the journal says %s, %s, %s, %s (the receipt was edited)",
			r.Run, textsafe.Short(r.Base), r.Branch, r.State, f.Run, textsafe.Short(f.Base), f.Branch, f.State)
	}
	if !samePlans(f.Plans, r.Plans) {
		add("receipt: plan versions %s; the journal adopted %s (the receipt was edited)", describePlans(r.Plans), describePlans(f.Plans))
	}
	if f.Usage != r.Usage {
		add("receipt: usage %d tokens, $%.6f; the journal says %d tokens, $%.6f", r.Usage.Tokens(), r.Usage.USD(), f.Usage.Tokens(), f.Usage.USD())
	}
	want := map[muster.TaskID]Task{}
	for _, t := range f.Tasks {
		want[t.ID] = t
	}
	seen := map[muster.TaskID]bool{}
	for _, t := range r.Tasks {
		seen[t.ID] = true
		w, ok := want[t.ID]
		switch {
		case !ok:
			add("task %s: in the receipt, not in the journal", t.ID)
		case t.State != w.State || t.Commit != w.Commit || t.Attempts != w.Attempts || t.Usage != w.Usage || len(t.Gates) != len(w.Gates):
			add("task %s: the receipt says %s, the journal says %s", t.ID, describe(t), describe(w))
		}
	}
	for _, t := range f.Tasks {
		if !seen[t.ID] {
			add("task %s: in the journal, not in the receipt", t.ID)
		}
	}
	return out
}

// tornTail returns how many bytes follow the journal's last newline.
func tornTail(journal []byte) int {
	for i := len(journal) - 1; i >= 0; i-- {
		if journal[i] == '\n' {
			return len(journal) - 1 - i
		}
	}
	return len(journal)
}

// shifted names one run of lines deleted from or inserted into the sealed
// journal, when that alone explains the difference (every other line
// matches, in order); otherwise it returns "".
func shifted(now, sealed []string) string {
	if len(now) == len(sealed) {
		return ""
	}
	i := 0
	for i < len(now) && i < len(sealed) && now[i] == sealed[i] {
		i++
	}
	if i == len(now) || i == len(sealed) {
		return "" // cut or appended at the end: said below
	}
	same := func(a, b []string) bool {
		if len(a) != len(b) {
			return false
		}
		for j := range a {
			if a[j] != b[j] {
				return false
			}
		}
		return true
	}
	if k := len(sealed) - len(now); k > 0 && same(now[i:], sealed[i+k:]) {
		return fmt.Sprintf("journal: %s deleted (the receipt sealed %d lines; the lines after match)", span(i+1, i+k), len(sealed))
	}
	if k := len(now) - len(sealed); k > 0 && same(now[i+k:], sealed[i:]) {
		return fmt.Sprintf("journal: %s inserted after the receipt was sealed (the lines around match)", span(i+1, i+k))
	}
	return ""
}

// span names lines a to b: "line 5 was" or "lines 5 to 7 were".
func span(a, b int) string {
	if a == b {
		return fmt.Sprintf("line %d was", a)
	}
	return fmt.Sprintf("lines %d to %d were", a, b)
}

// verifyBranch checks the run branch against the receipt and the
// journal: its tip is the sealed one, each task's sealed commit is on it
// and is that task's, and every commit on it is one a journal event
// records as muster's (Integrated): a commit nothing accounts for is
// foreign, whatever its trailer says.
func verifyBranch(r *Receipt, b Branch, events []muster.Event) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if b.Tip == "" {
		add("branch %s: missing (the receipt sealed %s)", r.Branch, textsafe.Short(r.Final))
		return out
	}
	if b.Tip != r.Final {
		add("branch %s: at %s, the receipt sealed %s (the branch was moved or rewritten)", r.Branch, textsafe.Short(b.Tip), textsafe.Short(r.Final))
	}
	on := map[string]muster.TaskID{}
	for _, c := range b.Commits {
		on[c.ID] = c.Task
	}
	for _, t := range r.Tasks {
		if t.Commit == "" {
			continue
		}
		claim, ok := on[t.Commit]
		switch {
		case !ok:
			add("task %s: its commit %s is not on the run branch", t.ID, textsafe.Short(t.Commit))
		case claim == "":
			add("task %s: its commit %s is on the run branch but has no Muster-Task trailer", t.ID, textsafe.Short(t.Commit))
		case claim != t.ID:
			add("task %s: its commit %s is on the run branch but is task %s's commit (Muster-Task: %s)", t.ID, textsafe.Short(t.Commit), claim, claim)
		}
	}
	made := map[string]bool{}
	for _, e := range events {
		if e.Type == muster.EvIntegrated && e.Commit != "" {
			made[e.Commit] = true
		}
	}
	if events == nil {
		return out
	}
	for i := len(b.Commits) - 1; i >= 0; i-- { // oldest first
		c := b.Commits[i]
		if made[c.ID] {
			continue
		}
		claim := "no Muster-Task trailer"
		if c.Task != "" {
			claim = "its trailer claims task " + string(c.Task)
		}
		add("commit %s on the run branch (%s) was not made by muster: no journal event records it", textsafe.Short(c.ID), claim)
	}
	return out
}

func describe(t Task) string {
	s := string(t.State)
	if t.Commit != "" {
		s += " at " + textsafe.Short(t.Commit)
	}
	return fmt.Sprintf("%s after %d attempts, %d gates, %d tokens, $%.6f", s, t.Attempts, len(t.Gates), t.Usage.Tokens(), t.Usage.USD())
}

// VerifyPlans checks each adopted version of the plan the receipt seals
// (Plans) against the hash of its file now: hashOf returns "" when the
// file is missing or does not parse. One sentence per difference.
func VerifyPlans(r *Receipt, hashOf func(file string) string) []string {
	var out []string
	for _, v := range r.Plans {
		switch h := hashOf(v.File); {
		case h == "":
			out = append(out, fmt.Sprintf("plan %s: the run's copy of this adopted version is missing or unreadable", textsafe.Sanitize(v.File)))
		case h != v.Hash:
			out = append(out, fmt.Sprintf("plan %s: its hash is %s, the receipt sealed %s (the plan was changed)", textsafe.Sanitize(v.File), textsafe.Short(h), textsafe.Short(v.Hash)))
		}
	}
	return out
}

func samePlans(a, b []PlanVersion) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func describePlans(vs []PlanVersion) string {
	if len(vs) == 0 {
		return "none"
	}
	out := ""
	for i, v := range vs {
		if i > 0 {
			out += ", "
		}
		out += textsafe.Sanitize(v.File) + " " + textsafe.Short(v.Hash)
	}
	return out
}
