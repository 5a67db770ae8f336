package driver

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/testout"
)

// failures reads a gate's failing tests from the runner's own output, or
// from its JUnit XML when the gate writes one.
func failures(r muster.GateResult) testout.Report {
	if r.JUnit != "" {
		if rep, err := testout.JUnit([]byte(r.JUnit)); err == nil && len(rep.Failures) > 0 {
			return rep
		}
	}
	return testout.Parse(r.Output)
}

// gateSummary is a failing gate's root cause in one line: the failing
// tests the runner names with the first one's assertion ("TestCount:
// count = 3, want 2; also TestOther"); else its last line of output, or
// its exit code.
func gateSummary(r muster.GateResult) string {
	if fs := failures(r).Failures; len(fs) > 0 {
		s := fs[0].Name
		if fs[0].Message != "" {
			s += ": " + fs[0].Message
		}
		if len(fs) > 1 {
			var more []string
			for _, f := range fs[1:] {
				more = append(more, f.Name)
			}
			if len(more) > 4 {
				more = append(more[:4:4], fmt.Sprintf("%d more", len(fs)-5))
			}
			s += "; also " + strings.Join(more, ", ")
		}
		return bound(s, 300)
	}
	if l := strings.TrimSpace(lastLines(r.Output, 1)); l != "" {
		return l
	}
	return fmt.Sprintf("exit %d, no output", r.ExitCode)
}

// triage decides whether a failing gate is the change's to fix, given the
// gate's result before the change. A gate that passed before is charged.
// One that failed before too is pre-existing only when it fails the same
// way: when the runner names failing tests (go test, TAP, Jest, Vitest,
// pytest, cargo, mocha, JUnit XML), no test fails now that did not
// before (newly lists those that do), and some test is still named when
// the base named some (else the build broke); without names, the same
// exit status and no failure line the base did not print.
func triage(after, before muster.GateResult) (charged bool, newly []string) {
	if after.Passed {
		return false, nil
	}
	if before.Passed {
		return true, nil
	}
	a, b := failures(after), failures(before)
	if len(a.Failures) > 0 || len(b.Failures) > 0 {
		was := map[string]bool{}
		for _, f := range b.Failures {
			was[normLine(f.Name)] = true
		}
		for _, f := range a.Failures {
			if !was[normLine(f.Name)] {
				newly = append(newly, f.Name)
			}
		}
		sort.Strings(newly)
		if len(newly) > 0 {
			return true, newly
		}
		return len(a.Failures) == 0, nil
	}
	if after.ExitCode != before.ExitCode {
		return true, nil
	}
	was := map[string]bool{}
	for _, l := range failureLines(before.Output) {
		was[l] = true
	}
	for _, l := range failureLines(after.Output) {
		if !was[l] {
			return true, nil
		}
	}
	return false, nil
}

var (
	failureWord = lazyRegexp(`(?i)error|fail|fatal|panic|exception|assert|traceback|problem|warning|invalid|undefined|cannot|denied|missing|not found|not ok|✖|✕|×`)
	absPath     = lazyRegexp(`(?:/[^/\s:'"()\[\]]+)+/`)
	digits      = lazyRegexp(`\d+`)
)

// failureLines are the lines of a gate's output that report a failure,
// normalised so that runs in different clones at different times
// compare: absolute directories, durations, line numbers and counts are
// left out.
func failureLines(out string) []string {
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if failureWord().MatchString(l) {
			got = append(got, normLine(l))
		}
	}
	return got
}

func normLine(l string) string {
	return strings.TrimSpace(digits().ReplaceAllString(absPath().ReplaceAllString(l, ""), "N"))
}

// undoGateOutput restores in dir the paths the gates changed and the
// change taken right after the agent (kept; nil: none) did not hold,
// against commit: files a gate writes are never the agent's.
func (w *worker) undoGateOutput(ctx context.Context, dir, commit string, kept *muster.Change) error {
	if w.d.opts.Gates == nil || len(w.remoteGates) > 0 || len(w.cfg.Gates) == 0 && len(w.task.Gates) == 0 {
		return nil
	}
	after, err := w.d.opts.Workspace.Change(ctx, dir, commit)
	if err != nil || after == nil {
		return err
	}
	agent := map[string]bool{}
	if kept != nil {
		for _, p := range kept.Paths() {
			agent[p] = true
		}
	}
	var extra []string
	for _, p := range after.Paths() {
		if !agent[p] {
			extra = append(extra, p)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	return w.d.opts.Workspace.Revert(ctx, dir, commit, extra)
}
