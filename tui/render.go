package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/textsafe"
	"github.com/muster-run/muster/runview"
)

// Styles. Lip Gloss renders full colour; Bubble Tea downsamples it to
// what the terminal supports.
var (
	stHeader  = lipgloss.NewStyle().Bold(true)
	stSection = lipgloss.NewStyle().Foreground(lipgloss.Color("8"))
	stDim     = lipgloss.NewStyle().Foreground(lipgloss.Color("8"))
	stSel     = lipgloss.NewStyle().Reverse(true)
	stOK      = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	stBad     = lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)
	stRun     = lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
	stWarn    = lipgloss.NewStyle().Foreground(lipgloss.Color("5"))
)

// stateMark is the one-character sign of a task state.
var stateMark = map[muster.TaskState]string{
	muster.StatePending:   "·",
	muster.StateRunning:   "▶",
	muster.StateSucceeded: "✓",
	muster.StateFailed:    "✗",
	muster.StateSkipped:   "-",
	muster.StateCancelled: "⊘",
}

func stateStyle(s muster.TaskState) lipgloss.Style {
	switch s {
	case muster.StateSucceeded:
		return stOK
	case muster.StateFailed:
		return stBad
	case muster.StateRunning:
		return stRun
	case muster.StateSkipped, muster.StateCancelled:
		return stWarn
	}
	return stDim
}

// render draws the whole frame: never wider than m.width nor taller than
// m.height.
func (m Model) render() string {
	w, h := max(m.width, 20), max(m.height, 5)
	var out []string
	out = append(out, stHeader.Render(clip(m.header(), w)))

	lanes := m.laneLines(w)
	keys := "↑/↓ j/k select task · q or ctrl+c leave view (the run goes on)"
	if m.stopsRun {
		keys = "↑/↓ j/k select task · q leave view (run continues) · ctrl+c stop run"
	}
	footer := stDim.Render(clip(keys, w))
	// Budget the rows: header, lanes title + lanes, tasks title + rows,
	// events title + at least 3 lines, footer.
	rest := h - 1 - 1 - (1 + len(lanes)) - 1
	if rest < 8 {
		// Small screen: fewer lanes.
		keep := max(0, len(lanes)-(8-rest))
		lanes = lanes[:keep]
		rest = h - 1 - 1 - (1 + len(lanes)) - 1
	}
	out = append(out, section("lanes", w))
	out = append(out, lanes...)

	taskRows := min(len(m.st.Order), max(3, (rest-2)*3/5)) // tasks get ~3/5
	taskRows = max(taskRows, min(12, rest-6))
	taskRows = max(1, min(taskRows, rest-5))
	out = append(out, m.tasksAndDetail(w, taskRows)...)

	evRows := max(0, rest-1-taskRows-1)
	out = append(out, section("events", w))
	tail := m.st.tail
	if len(tail) > evRows {
		tail = tail[len(tail)-evRows:]
	}
	for _, l := range tail {
		out = append(out, clip(l, w))
	}
	for i := len(tail); i < evRows; i++ {
		out = append(out, "")
	}
	out = append(out, footer)
	if len(out) > h {
		out = out[:h]
	}
	return strings.Join(out, "\n")
}

func section(name string, w int) string {
	s := "── " + name + " "
	return stSection.Render(s + strings.Repeat("─", max(0, w-lipgloss.Width(s))))
}

func (m Model) header() string {
	done, running, failed, total := m.st.Counts()
	run := textsafe.Sanitize(m.st.ID)
	if run == "" {
		run = "(waiting for events)"
	}
	s := fmt.Sprintf("[%d/%d]  running %d  failed %d  elapsed %s  spend %s",
		done, total, running, failed, runview.Duration(m.elapsed()), muster.FormatUSD(m.st.Usage.CostMicros))
	if m.st.budget > 0 {
		s += " / " + muster.FormatUSD(m.st.budget)
	}
	if m.st.State != "" {
		s += "  run " + m.st.State
	}
	return s + "  · muster " + run
}

// elapsed is the run's time so far, or in all when it ended, that a
// muster process ran it: after a resume the clock goes on from where
// the stopped process left it, not from the wall clock (issue 25).
func (m Model) elapsed() time.Duration {
	if m.st.Start.IsZero() {
		return 0
	}
	return max(0, m.st.Active(m.now()))
}

// laneLines draws one line per executor clone.
func (m Model) laneLines(w int) []string {
	sw := 8
	for _, l := range m.st.Clones {
		sw = max(sw, lipgloss.Width(textsafe.Sanitize(l.Name())))
	}
	var lines []string
	for _, l := range m.st.Clones {
		slot := pad(textsafe.Sanitize(l.Name()), sw)
		total := fmt.Sprintf("Σ %s tok %s", runview.Tokens(l.Total.Tokens()), muster.FormatUSD(l.Total.CostMicros))
		if l.Task == "" {
			state, detail := "idle", ""
			if exec, _, ok := strings.Cut(l.Slot, "#"); ok && m.st.State == "" {
				if p, held := m.st.HeldBack(exec, m.now()); held {
					state, detail = paceText(p, m.now())
				}
			}
			if state != "idle" {
				line := fmt.Sprintf("%s  %-14s %-16s %6s %9s %8s  %s", slot, state, detail, "", "", "", total)
				lines = append(lines, stWarn.Render(clip(line, w)))
				continue
			}
			line := fmt.Sprintf("%s  %-14s %-16s %6s %9s %8s  %s", slot, "idle", "", "", "", "", total)
			lines = append(lines, stDim.Render(clip(line, w)))
			continue
		}
		t := m.st.Tasks[l.Task]
		phase := "agent"
		if l.Role == muster.RoleReviewer {
			phase = "reviewing"
			if t.Round > 0 {
				phase = fmt.Sprintf("reviewing r%d", t.Round)
			}
		} else if t != nil {
			phase = phaseText(t)
			if rc := m.st.RaceUnderWay(l.Task); rc != nil {
				if i, n := rc.Place(l.Slot); i > 0 {
					phase = fmt.Sprintf("race %d/%d %s", i, n, phase)
				}
			}
		}
		el := time.Duration(0)
		if !l.Since.IsZero() && m.st.State == "" {
			el = max(0, m.now().Sub(l.Since))
		}
		line := fmt.Sprintf("%s  %-14s %-16s %6s %9s %8s  %s", slot, pad(textsafe.Sanitize(string(l.Task)), 14), phase,
			runview.Duration(el), runview.Tokens(l.Work.Tokens())+" tok", muster.FormatUSD(l.Work.CostMicros), total)
		lines = append(lines, stRun.Render(clip(line, w)))
	}
	return lines
}

// phaseText names a running task's phase: agent, gates, review round n,
// queued (its commit waits in the integration queue), batch gates (the
// plan-wide gates run on the batch that holds it); "fix n" is the agent
// in a fix round.
func phaseText(t *runview.Task) string {
	switch t.Phase {
	case "integrating":
		return "queued"
	case "verifying":
		return "batch gates"
	case "", "agent":
		if t.Round > 0 {
			return fmt.Sprintf("agent (fix %d)", t.Round)
		}
		return "agent"
	case "review":
		if t.Round == 0 {
			return "review"
		}
		return fmt.Sprintf("review round %d", t.Round)
	}
	return textsafe.Sanitize(t.Phase)
}

// tasksAndDetail draws the task list beside the selected task's details.
func (m Model) tasksAndDetail(w, rows int) []string {
	lw := w
	if w >= 70 {
		lw = min(60, w*45/100)
	}
	dw := w - lw - 3
	left := []string{section("tasks", lw)}
	// Scroll so the selection stays visible.
	first := 0
	if m.selected >= rows {
		first = m.selected - rows + 1
	}
	iw := 6
	for _, id := range m.st.Order {
		iw = max(iw, min(18, lipgloss.Width(textsafe.Sanitize(string(id)))))
	}
	for i := first; i < len(m.st.Order) && i < first+rows; i++ {
		t := m.st.Tasks[m.st.Order[i]]
		mark := stateMark[t.State]
		line := fmt.Sprintf("%s %s %-9s %s", mark, pad(textsafe.Sanitize(string(t.ID)), iw), t.State, textsafe.Sanitize(t.Title))
		line = pad(clip(line, lw-2), lw-2)
		if i == m.selected {
			left = append(left, stSel.Render("› "+line))
		} else {
			left = append(left, "  "+stateStyle(t.State).Render(line))
		}
	}
	for len(left) < rows+1 {
		left = append(left, strings.Repeat(" ", lw))
	}
	if dw < 20 {
		return left
	}
	right := m.detail(dw, rows+1)
	for i := range left {
		r := ""
		if i < len(right) {
			r = right[i]
		}
		left[i] = left[i] + stSection.Render(" │ ") + r
	}
	return left
}

// detail describes the selected task in n lines of width w: state, clone,
// phase, commit and paths, gates, findings and its latest agent output.
func (m Model) detail(w, n int) []string {
	id := m.Selected()
	if id == "" {
		return nil
	}
	t := m.st.Tasks[id]
	lines := []string{stHeader.Render(clip(textsafe.Sanitize(string(t.ID))+": "+textsafe.Sanitize(t.Title), w))}
	info := fmt.Sprintf("%s  attempt %d", t.State, t.Attempt)
	if t.Slot != "" {
		info += "  on " + textsafe.Sanitize(t.Where())
	}
	if t.State == muster.StateRunning {
		info += "  " + phaseText(t)
	}
	info += fmt.Sprintf("  %s tok %s", runview.Tokens(t.Usage.Tokens()), muster.FormatUSD(t.Usage.CostMicros))
	lines = append(lines, clip(info, w))
	if len(t.After) > 0 {
		after := make([]string, len(t.After))
		for i, a := range t.After {
			after[i] = textsafe.Sanitize(string(a))
		}
		lines = append(lines, clip("after "+strings.Join(after, ", "), w))
	}
	if t.Commit != "" {
		lines = append(lines, clip("commit "+textsafe.Short(t.Commit), w))
	}
	if len(t.Paths) > 0 {
		lines = append(lines, clip("paths "+textsafe.Sanitize(strings.Join(t.Paths, ", ")), w))
	}
	gated, passed := t.LatestGates()
	if finds := t.Findings(); len(gated) > 0 || finds > 0 {
		var g []string
		for _, name := range gated {
			if passed[name] {
				g = append(g, textsafe.Sanitize(name)+" ✓")
			} else {
				g = append(g, textsafe.Sanitize(name)+" ✗")
			}
		}
		s := "gates " + strings.Join(g, " ")
		if finds > 0 {
			s += fmt.Sprintf("  findings %d", finds)
		}
		lines = append(lines, clip(s, w))
	}
	if reason := textsafe.Sanitize(t.Reason); reason != "" {
		lines = append(lines, stBad.Render(clip("reason: "+reason, w)))
	}
	lines = append(lines, stDim.Render(clip("latest agent output:", w)))
	room := n - len(lines)
	var out []string
	msgs := m.st.msgs[id]
	for i := len(msgs) - 1; i >= 0 && len(out) < room; i-- {
		wrapped := wrap(msgs[i], w-2)
		for j := len(wrapped) - 1; j >= 0 && len(out) < room; j-- {
			out = append(out, "  "+wrapped[j])
		}
	}
	for i := len(out) - 1; i >= 0; i-- {
		lines = append(lines, out[i])
	}
	if len(lines) > n {
		lines = lines[:n]
	}
	return lines
}

// clip cuts plain text to at most w cells, marking the cut with "…".
func clip(s string, w int) string {
	if lipgloss.Width(s) <= w {
		return s
	}
	if w <= 0 {
		return ""
	}
	var b strings.Builder
	cur := 0
	for _, r := range s {
		rw := lipgloss.Width(string(r))
		if cur+rw > w-1 {
			break
		}
		b.WriteRune(r)
		cur += rw
	}
	return b.String() + "…"
}

// pad clips s to w cells and fills it with spaces to exactly w.
func pad(s string, w int) string {
	s = clip(s, w)
	return s + strings.Repeat(" ", max(0, w-lipgloss.Width(s)))
}

// wrap breaks plain text into lines of at most w cells, at spaces when
// it can.
func wrap(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	var lines []string
	for _, word := range strings.Fields(s) {
		for lipgloss.Width(word) > w {
			head := clip(word, w+1) // w runes of text plus "…" which we drop
			head = strings.TrimSuffix(head, "…")
			lines = append(lines, head)
			word = word[len(head):]
		}
		if n := len(lines); n > 0 && lines[n-1] != "" && lipgloss.Width(lines[n-1])+1+lipgloss.Width(word) <= w {
			lines[n-1] += " " + word
			continue
		}
		lines = append(lines, word)
	}
	return lines
}

// paceText describes a rate-limited credential's pace for an idle lane:
// "backoff" with the time left, else "paced" with its current limit.
func paceText(p muster.Pace, now time.Time) (string, string) {
	if now.Before(p.Until) {
		return "rate limited", "retry in " + runview.Duration(p.Until.Sub(now))
	}
	return "paced", fmt.Sprintf("%d at once", p.LimitAt(now))
}
