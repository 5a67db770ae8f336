package planfile

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/owns"
	"github.com/muster-run/muster/internal/suggest"
)

// Options tune Validate.
type Options struct {
	// Strict makes overlapping Owns between tasks that may run at the
	// same time an error instead of a warning.
	Strict bool
	// Reserved are repository paths no task may own besides
	// muster.ReservedPaths: the config file in use, relative to the
	// repository's top.
	Reserved []string
}

// Validate checks a parsed plan against the crew in cfg and returns every
// problem at once, sorted by line: bad and duplicate IDs, unknown
// dependencies, dependency cycles, Owns entries that escape the
// repository, unknown executors, roles no executor has, "Kind: code"
// without "Run:", and overlapping Owns between tasks that may run at the
// same time (a warning unless opts.Strict). A nil cfg skips the checks
// against the crew. Done tasks count as satisfied dependencies and are
// not checked for overlaps. The problems name p.Source.
func Validate(p *muster.Plan, cfg *muster.Config, opts Options) muster.Problems {
	ps := &problems{file: p.Source, reserved: opts.Reserved}
	if len(p.Tasks) == 0 {
		if IsYAML(p.Source) {
			ps.addf(1, `plan has no tasks: a YAML plan lists them under "tasks:", each with an id and a title`)
		} else {
			ps.addf(1, `plan has no tasks: a task starts with a heading "## [ ] ID: Title"`)
		}
		return ps.list
	}
	if cfg != nil && cfg.Run.MaxTasks > 0 && len(p.Tasks) > cfg.Run.MaxTasks {
		ps.addf(1, "%d tasks: the cap on a run's tasks is %d ([run] max_tasks in %s): raise it or split the plan", len(p.Tasks), cfg.Run.MaxTasks, cfg.Source)
	}
	ids := ps.checkIDs(p.Tasks, nil)
	ps.checkDeps(p.Tasks, ids, nil)
	ps.checkCycles(p.Tasks, ids)
	normOwns := ps.checkTasks(p.Tasks, cfg)
	if !ps.hasCycle {
		ps.checkOverlaps(p.Tasks, ids, normOwns, opts.Strict)
	}
	SortProblems(ps.list)
	return ps.list
}

// ValidateFragment checks the tasks frag that the delegating task parent
// proposes to add to the plan existing: IDs valid and unique (within the
// fragment and against the plan), dependencies known (in the fragment or
// the plan), no cycles, executors and roles in the crew, each new task's
// Owns inside the parent's Owns (when the parent has any), no Authority
// above the parent's, no commands (Run, Gate, Loop) unless the parent
// has Authority shell, and at most maxTasks tasks (no cap when
// maxTasks <= 0). New tasks that may run at the same time with
// overlapping Owns get a warning (Problem.Warning): decide with
// Problems.Errors. The problems name frag.Source. An empty fragment is
// valid.
func ValidateFragment(parent *muster.Task, existing *muster.Plan, frag *muster.Plan, cfg *muster.Config, maxTasks int) muster.Problems {
	ps := &problems{file: frag.Source}
	if maxTasks > 0 && len(frag.Tasks) > maxTasks {
		ps.addf(0, "%d new tasks; task %s may add at most %d", len(frag.Tasks), parent.ID, maxTasks)
	}
	old := map[muster.TaskID]*muster.Task{}
	for _, t := range existing.Tasks {
		old[t.ID] = t
	}
	ids := ps.checkIDs(frag.Tasks, old)
	ps.checkDeps(frag.Tasks, ids, old)
	ps.checkCycles(frag.Tasks, ids)
	normOwns := ps.checkTasks(frag.Tasks, cfg)
	if !ps.hasCycle {
		// New tasks that may run at the same time should not share files:
		// a warning, as in Validate without Strict.
		ps.checkOverlaps(frag.Tasks, ids, normOwns, false)
	}
	ps.checkTrust(parent, frag.Tasks, cfg)
	var parentOwns []string
	for _, e := range parent.Owns {
		if n, err := owns.Normalize(e); err == nil {
			parentOwns = append(parentOwns, n)
		}
	}
	if len(parentOwns) > 0 {
		for i, t := range frag.Tasks {
			if len(t.Owns) == 0 {
				ps.addf(t.Line, "task %s: needs Owns inside the Owns of task %s (%s)", t.ID, parent.ID, strings.Join(parentOwns, ", "))
				continue
			}
			for _, e := range normOwns[i] {
				if !covered(parentOwns, e) {
					ps.addf(ownsLine(t, e), "task %s: Owns %q is outside the Owns of task %s (%s)", t.ID, e, parent.ID, strings.Join(parentOwns, ", "))
				}
			}
		}
	}
	SortProblems(ps.list)
	return ps.list
}

// authorityRank orders authorities from least to most.
var authorityRank = map[muster.Authority]int{muster.AuthorityRead: 0, muster.AuthorityWrite: 1, muster.AuthorityShell: 2}

// checkTrust holds agent-written tasks to their parent's limits: no task
// may ask for more authority than the parent has, skip the review the
// parent gets, or get more Retries, a longer Timeout or a larger Budget
// than the parent (a limit the parent leaves unset is the cap of
// muster's limits.go); commands (Run, Gate, Loop), which muster would
// execute, come only from a parent with shell authority (ARCHITECTURE.md:
// agent output is never run as a command unless an approved authority
// says so). Each refusal names the key and the cap.
func (ps *problems) checkTrust(parent *muster.Task, tasks []*muster.Task, cfg *muster.Config) {
	pa := parent.EffectiveAuthority()
	timeout, budget := parentLimits(parent, cfg)
	for _, t := range tasks {
		if d, pd := t.DelegationDepth(), parent.DelegationDepth(); d > pd-1 {
			ps.addf(t.LineOf("delegates"), "task %s: Delegates %d is more than task %s may pass on (%d: a delegated task carries at most its delegator's Delegates %d less one)", t.ID, d, parent.ID, pd-1, pd)
		}
		if a := t.EffectiveAuthority(); authorityRank[a] > authorityRank[pa] {
			ps.addf(t.LineOf("authority"), "task %s: Authority %s is more than task %s has (%s)", t.ID, a, parent.ID, pa)
		}
		if t.Review == "none" && parent.Review != "none" {
			ps.addf(t.LineOf("review"), "task %s: Review none skips the review task %s gets; a delegated task is reviewed as its delegator is", t.ID, parent.ID)
		}
		if t.Retries > parent.Retries {
			ps.addf(t.LineOf("retries"), "task %s: Retries %d is more than task %s has (%d)", t.ID, t.Retries, parent.ID, parent.Retries)
		}
		if timeout > 0 && t.Timeout > timeout {
			ps.addf(t.LineOf("timeout"), "task %s: Timeout %s is more than task %s has (%s)", t.ID, t.Timeout, parent.ID, timeout)
		}
		pb := budget
		if pb.USDMicros > 0 && t.Budget.USDMicros > pb.USDMicros {
			ps.addf(t.LineOf("budget"), "task %s: Budget $%.2f is more than task %s has ($%.2f)", t.ID, float64(t.Budget.USDMicros)/1e6, parent.ID, float64(pb.USDMicros)/1e6)
		}
		if pb.Tokens > 0 && t.Budget.Tokens > pb.Tokens {
			ps.addf(t.LineOf("budget"), "task %s: Budget of %d tokens is more than task %s has (%d tokens)", t.ID, t.Budget.Tokens, parent.ID, pb.Tokens)
		}
		if pa == muster.AuthorityShell {
			continue
		}
		for _, s := range KeySpecs {
			k := strings.ToLower(s.Name)
			if _, ok := t.KeyLines[k]; ok && s.Command {
				ps.addf(t.LineOf(k), "task %s: %s is a command; only a delegating task with Authority shell may propose commands", t.ID, s.Name)
			}
		}
	}
}

// parentLimits are the Timeout and Budget a delegated task may not
// exceed: its delegator's, and where the delegator sets none, the run's
// defaults (its executor's timeout, the run's budget_usd and
// budget_tokens); 0 where nothing caps them below limits.go.
func parentLimits(parent *muster.Task, cfg *muster.Config) (time.Duration, muster.Budget) {
	timeout, b := parent.Timeout, parent.Budget
	if cfg == nil {
		return timeout, b
	}
	if timeout == 0 {
		for _, e := range cfg.Executors {
			if parent.Executor != "" && e.Name != parent.Executor || parent.Executor == "" && !e.HasRole(parent.EffectiveRole()) {
				continue
			}
			if e.Timeout == 0 {
				timeout = 0 // one executor it may run on has no timeout
				break
			}
			timeout = max(timeout, e.Timeout)
		}
	}
	if b.USDMicros == 0 {
		b.USDMicros = cfg.Run.BudgetUSDMicros
	}
	if b.Tokens == 0 {
		b.Tokens = cfg.Run.BudgetTokens
	}
	return timeout, b
}

// checkIDs reports bad and duplicate IDs, and IDs already in old. It
// returns the index of the first task with each ID.
func (ps *problems) checkIDs(tasks []*muster.Task, old map[muster.TaskID]*muster.Task) map[muster.TaskID]int {
	ids := map[muster.TaskID]int{}
	for i, t := range tasks {
		switch {
		case len(t.ID) > muster.MaxIDLength:
			ps.addf(t.Line, "task ID of %d characters: the cap is %d", len(t.ID), muster.MaxIDLength)
			continue
		case !muster.IDPattern().MatchString(string(t.ID)):
			ps.addf(t.Line, `bad task ID %q: use letters, digits, ".", "_" and "-", starting with a letter or digit`, t.ID)
		}
		if first, dup := ids[t.ID]; dup {
			ps.addf(t.Line, "duplicate task ID %q (first on line %d)", t.ID, tasks[first].Line)
			continue
		}
		if _, clash := old[t.ID]; clash {
			ps.addf(t.Line, "task ID %q is already in the plan", t.ID)
		}
		ids[t.ID] = i
	}
	return ids
}

// checkDeps reports dependencies that name no task of tasks or old.
func (ps *problems) checkDeps(tasks []*muster.Task, ids map[muster.TaskID]int, old map[muster.TaskID]*muster.Task) {
	var names []string
	for _, t := range tasks {
		for k, d := range t.After {
			if _, ok := ids[d]; ok {
				continue
			}
			if _, ok := old[d]; ok {
				continue
			}
			if names == nil {
				for _, u := range tasks {
					names = append(names, string(u.ID))
				}
				for id := range old {
					names = append(names, string(id))
				}
				sort.Strings(names[len(tasks):])
			}
			if s := suggest.Nearest(string(d), names); s != "" {
				ps.addf(t.ItemLine("after", k), "task %s: unknown dependency %q; did you mean %q?", t.ID, d, s)
			} else {
				ps.addf(t.ItemLine("after", k), "task %s: unknown dependency %q", t.ID, d)
			}
		}
	}
}

// checkCycles reports one cycle for every strongly connected group of
// tasks (not done) that wait for each other, as "a -> b -> a", where
// "a -> b" reads "a waits for b".
func (ps *problems) checkCycles(tasks []*muster.Task, ids map[muster.TaskID]int) {
	n := len(tasks)
	adj := make([][]int, n)
	for i, t := range tasks {
		if t.Done || ids[t.ID] != i {
			continue
		}
		for _, d := range t.After {
			if j, ok := ids[d]; ok && !tasks[j].Done {
				adj[i] = append(adj[i], j)
			}
		}
	}
	for _, comp := range sccs(adj) {
		// comp is sorted by plan order; start from its first task.
		in := make(map[int]bool, len(comp))
		for _, v := range comp {
			in[v] = true
		}
		cycle := findCycle(adj, comp[0], in)
		if cycle == nil {
			continue
		}
		ps.hasCycle = true
		names := make([]string, len(cycle))
		for k, v := range cycle {
			names[k] = string(tasks[v].ID)
		}
		t := tasks[comp[0]]
		ps.addf(t.LineOf("after"), "dependency cycle: %s", strings.Join(names, " -> "))
	}
}

// sccs returns the strongly connected components of adj that hold a
// cycle (more than one vertex, or a self-loop), each sorted, in order of
// their smallest vertex. Iterative Tarjan: plans may be deep.
func sccs(adj [][]int) [][]int {
	n := len(adj)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var out [][]int
	var vstack []int
	next := 0
	type frame struct{ v, e int }
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		call := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		vstack = append(vstack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.e < len(adj[f.v]) {
				w := adj[f.v][f.e]
				f.e++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					vstack = append(vstack, w)
					onStack[w] = true
					call = append(call, frame{w, 0})
				} else if onStack[w] {
					low[f.v] = min(low[f.v], index[w])
				}
				continue
			}
			v := f.v
			call = call[:len(call)-1]
			if len(call) > 0 {
				u := call[len(call)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] != index[v] {
				continue
			}
			var comp []int
			for {
				w := vstack[len(vstack)-1]
				vstack = vstack[:len(vstack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			if len(comp) > 1 || selfLoop(adj, v) {
				sort.Ints(comp)
				out = append(out, comp)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

func selfLoop(adj [][]int, v int) bool {
	for _, w := range adj[v] {
		if w == v {
			return true
		}
	}
	return false
}

// findCycle returns a path start -> ... -> start inside the component in
// (a breadth-first search, so the cycle is a shortest one through start).
func findCycle(adj [][]int, start int, in map[int]bool) []int {
	prev := map[int]int{}
	queue := []int{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range adj[v] {
			if !in[w] {
				continue
			}
			if w == start {
				path := []int{start}
				for u := v; u != start; u = prev[u] {
					path = append(path, u)
				}
				// path is start, v, ..., reversed after start.
				rev := []int{start}
				for k := len(path) - 1; k >= 1; k-- {
					rev = append(rev, path[k])
				}
				return append(rev, start)
			}
			if _, seen := prev[w]; !seen {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return nil
}

// checkTasks reports problems of single tasks: Owns entries, executors,
// roles, code tasks without Run. It returns each task's normalised Owns.
func (ps *problems) checkTasks(tasks []*muster.Task, cfg *muster.Config) [][]string {
	norm := make([][]string, len(tasks))
	var execNames []string
	if cfg != nil {
		for _, e := range cfg.Executors {
			execNames = append(execNames, e.Name)
		}
	}
	for i, t := range tasks {
		ps.checkTitle(t)
		ps.checkRace(t, cfg, execNames)
		for k, e := range t.Owns {
			n, err := owns.Normalize(e)
			if err != nil {
				ps.addf(t.ItemLine("owns", k), "task %s: Owns %q: %v", t.ID, e, err)
				continue
			}
			if r := ps.reservedBy(n); r != "" {
				ps.addf(t.ItemLine("owns", k), "task %s: Owns %q: %s is muster's or git's, which no task may change; own the files the task works on", t.ID, e, r)
				continue
			}
			norm[i] = append(norm[i], n)
		}
		if t.EffectiveKind() == muster.KindCode && strings.TrimSpace(t.Run) == "" {
			ps.addf(t.LineOf("kind"), "task %s: Kind code needs a Run command", t.ID)
		}
		if cfg == nil {
			continue
		}
		ps.checkModel(t, cfg)
		role := t.EffectiveRole()
		if t.Executor != "" {
			ex := cfg.Executor(t.Executor)
			switch {
			case ex == nil && cfg.Fleet.NATS != "":
				ps.awaitsFleet(t, execNames, cfg)
			case ex == nil:
				if s := suggest.Nearest(t.Executor, execNames); s != "" {
					ps.addf(t.LineOf("executor"), "task %s: unknown executor %q; did you mean %q?", t.ID, t.Executor, s)
				} else {
					ps.addf(t.LineOf("executor"), "task %s: unknown executor %q (the crew has: %s)", t.ID, t.Executor, crewList(execNames))
				}
			case t.EffectiveKind() != muster.KindCode && !ex.HasRole(role):
				ps.addf(t.LineOf("role"), "task %s: executor %q has no role %q", t.ID, t.Executor, role)
			}
			continue
		}
		if t.EffectiveKind() == muster.KindCode {
			continue
		}
		found := false
		for _, e := range cfg.Executors {
			if e.HasRole(role) {
				found = true
				break
			}
		}
		if !found {
			ps.addf(t.LineOf("role"), "task %s: no executor in the crew has role %q", t.ID, role)
		}
	}
	return norm
}

// checkTitle reports a title too long or with control characters.
// awaitsFleet is a warning, in a run on a fleet, for a task that names an
// executor neither the config nor the fleet's workers have: the run
// waits for a worker serving it to join (up to [fleet] join_wait once it
// has nothing else to do), then skips the task.
func (ps *problems) awaitsFleet(t *muster.Task, execNames []string, cfg *muster.Config) {
	hint := ""
	if s := suggest.Nearest(t.Executor, execNames); s != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", s)
	}
	ps.list = append(ps.list, muster.Problem{File: ps.file, Line: t.LineOf("executor"), Warning: true,
		Message: fmt.Sprintf("task %s: executor %q is not in the crew%s: no worker of the fleet serves it yet; the run waits for one to join, up to [fleet] join_wait (%s) once nothing else runs, then skips the task",
			t.ID, t.Executor, hint, cfg.Fleet.JoinWaitOrDefault())})
}

func (ps *problems) checkTitle(t *muster.Task) {
	switch {
	case len(t.Title) > muster.MaxTitleLength:
		ps.addf(t.Line, "task %s: title of %d bytes: the cap is %d; put the detail in the task's text", t.ID, len(t.Title), muster.MaxTitleLength)
	case muster.HasControl(t.Title):
		ps.addf(t.Line, "task %s: the title holds a control character (such as NUL, an escape or a bidirectional override); write it as plain text", t.ID)
	}
}

// reservedBy returns the reserved path (muster.ReservedPaths, then the
// extra ones) that the normalised Owns entry n names or lies in; "" when
// none. Any .git component (a nested repository's, in any case) is git's.
func (ps *problems) reservedBy(n string) string {
	for _, r := range append(append([]string(nil), muster.ReservedPaths...), ps.reserved...) {
		dir := strings.TrimSuffix(r, "/")
		if n == r || n == dir || strings.HasPrefix(n, dir+"/") {
			return r
		}
	}
	for _, seg := range strings.Split(n, "/") {
		if strings.EqualFold(seg, ".git") {
			return ".git"
		}
	}
	return ""
}

// checkModel reports a task's Model: that its executor does not list, or,
// without an Executor:, that no executor of its role lists.
func (ps *problems) checkModel(t *muster.Task, cfg *muster.Config) {
	if t.Model == "" || t.EffectiveKind() == muster.KindCode {
		return
	}
	line := t.LineOf("model")
	if t.Executor != "" {
		if ex := cfg.Executor(t.Executor); ex != nil && !ex.OffersModel(t.Model) {
			ps.addf(line, "task %s: executor %s does not list model %q (its models: %s)", t.ID, ex.Name, t.Model, modelList(ex))
		}
		return
	}
	role := t.EffectiveRole()
	var lists []string
	for _, e := range cfg.Executors {
		if !e.HasRole(role) {
			continue
		}
		if e.OffersModel(t.Model) {
			return
		}
		lists = append(lists, e.Name+": "+modelList(e))
	}
	if len(lists) > 0 {
		ps.addf(line, "task %s: no executor with role %s lists model %q (%s)", t.ID, role, t.Model, strings.Join(lists, "; "))
	}
}

// modelList names the models an executor lists.
func modelList(e *muster.ExecutorSpec) string {
	ms := e.Models
	if e.Model != "" && !slices.Contains(ms, e.Model) {
		ms = append([]string{e.Model}, ms...)
	}
	return strings.Join(ms, ", ")
}

func crewList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// covered reports whether the normalised entry e lies inside the parent's
// entries: a file any entry matches, or a directory or glob under a
// parent directory (or "dir/**" glob), or an entry the parent lists as is.
func covered(parent []string, e string) bool {
	isGlob := strings.ContainsAny(e, "*?[{")
	if !isGlob && !strings.HasSuffix(e, "/") {
		return owns.Match(parent, e)
	}
	// The static directory part of e.
	segs := strings.Split(strings.TrimSuffix(e, "/"), "/")
	static := segs
	for i, s := range segs {
		if strings.ContainsAny(s, "*?[{") {
			static = segs[:i]
			break
		}
	}
	prefix := strings.Join(static, "/")
	for _, p := range parent {
		if p == e {
			return true
		}
		dir, ok := strings.CutSuffix(p, "/")
		if !ok {
			dir, ok = strings.CutSuffix(p, "/**")
		}
		if !ok || strings.ContainsAny(dir, "*?[{") {
			continue
		}
		if prefix == dir || strings.HasPrefix(prefix, dir+"/") {
			return true
		}
	}
	return false
}

// SortProblems orders a plan file's problems by line, keeping the order of
// problems on the same line: the order validate prints them in, which
// every other checker of a plan (the MCP server, the planner) keeps.
func SortProblems(ps muster.Problems) {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Line < ps[j].Line })
}
