package planfile

import "github.com/muster-run/muster"

// Splice prepares the tasks of a validated fragment for the live plan:
// copies of frag's tasks with Parent set to the delegating task, and the
// delegating task added to each one's After (first, when missing), so
// that every new task waits for its parent. The caller appends them to
// the plan (through the journal) and must have checked them with
// ValidateFragment first.
func Splice(parent *muster.Task, frag *muster.Plan) []*muster.Task {
	out := make([]*muster.Task, 0, len(frag.Tasks))
	for _, t := range frag.Tasks {
		c := *t
		c.Parent = parent.ID
		// A delegated task inherits the limits its delegator has and it
		// leaves unset (checkTrust refused any above them).
		if c.Timeout == 0 {
			c.Timeout = parent.Timeout
		}
		if c.Budget.USDMicros == 0 {
			c.Budget.USDMicros = parent.Budget.USDMicros
		}
		if c.Budget.Tokens == 0 {
			c.Budget.Tokens = parent.Budget.Tokens
		}
		c.After = append([]muster.TaskID(nil), t.After...)
		c.Owns = append([]string(nil), t.Owns...)
		c.Reads = append([]string(nil), t.Reads...)
		c.Gates = append([]string(nil), t.Gates...)
		c.Satisfies = append([]string(nil), t.Satisfies...)
		if t.Loop != nil {
			l := *t.Loop
			c.Loop = &l
		}
		c.KeyLines = make(map[string]int, len(t.KeyLines))
		for k, v := range t.KeyLines {
			c.KeyLines[k] = v
		}
		c.ItemLines = make(map[string][]int, len(t.ItemLines))
		for k, v := range t.ItemLines {
			c.ItemLines[k] = append([]int(nil), v...)
		}
		has := false
		for _, d := range c.After {
			if d == parent.ID {
				has = true
				break
			}
		}
		if !has {
			c.After = append([]muster.TaskID{parent.ID}, c.After...)
		}
		out = append(out, &c)
	}
	return out
}
