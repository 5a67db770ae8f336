package planfile

import (
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/suggest"
)

// checkRace reports the problems of a task's Race: and of a list of
// candidates in Executor: (accepted only with Race:), each at its line.
func (ps *problems) checkRace(t *muster.Task, cfg *muster.Config, execNames []string) {
	if len(t.Candidates) > 0 && !t.Racing() {
		ps.addf(t.LineOf("executor"), "task %s: Executor names one executor; a list of candidates (%s) needs Race: N or Race: first", t.ID, strings.Join(t.Candidates, ", "))
		return
	}
	if !t.Racing() {
		return
	}
	line := t.LineOf("race")
	switch {
	case t.EffectiveKind() == muster.KindCode:
		ps.addf(line, "task %s: Race: on a Kind: code task: a command runs the same every time; race an agent task", t.ID)
	case t.Delegates:
		ps.addf(line, "task %s: Race: on a Delegates: task: only one plan may be spliced in; race the tasks it delegates instead", t.ID)
	}
	seen := map[string]bool{}
	for _, c := range t.Candidates {
		if c == "" {
			ps.addf(t.LineOf("executor"), "task %s: an empty name in the candidates of Executor:", t.ID)
			continue
		}
		if seen[c] {
			ps.addf(t.LineOf("executor"), "task %s: candidate %q named twice in Executor:", t.ID, c)
		}
		seen[c] = true
		if cfg == nil {
			continue
		}
		ex := cfg.Executor(c)
		switch {
		case ex == nil:
			if s := suggest.Nearest(c, execNames); s != "" {
				ps.addf(t.LineOf("executor"), "task %s: unknown candidate executor %q; did you mean %q?", t.ID, c, s)
			} else {
				ps.addf(t.LineOf("executor"), "task %s: unknown candidate executor %q (the crew has: %s)", t.ID, c, crewList(execNames))
			}
		case !ex.HasRole(t.EffectiveRole()):
			ps.addf(t.LineOf("executor"), "task %s: candidate executor %q has no role %q", t.ID, c, t.EffectiveRole())
		}
	}
	if t.Race > 0 && len(t.Candidates) > 0 && len(t.Candidates) > t.Race {
		ps.addf(line, "task %s: Race %d names %d candidates in Executor:; name at most %d, or raise Race", t.ID, t.Race, len(t.Candidates), t.Race)
	}
}
