package muster_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A new event type is folded wherever the journal is read
// (CONTRIBUTING.md, "A new event type", step 2), or left out of a fold on
// purpose: each fold that switches on event types names it in its
// non-test files, or its row here lists it as ignored. The test fails on
// an event some fold neither names nor ignores, so adding one cannot skip
// a fold unnoticed (an ignored event the fold now names is logged: drop
// it from the row).
var eventFolds = map[string][]string{
	// The scheduler: what it does not decide on.
	"engine": {"EvLoopAttempt", "EvLoopEnded", "EvRefused", "EvBlocked"},
	// The views' model.
	"runview": {"EvToolUse", "EvMessage", "EvViolation", "EvIntegrating", "EvNote", "EvLoopAttempt", "EvLoopEnded",
		"EvAgentStarted", "EvExecutorPaused", "EvRefused", "EvRaceStarted", "EvCandidateFinished", "EvRaceWon"},
	// Usage and cost.
	"report": {"EvTasksPlanned", "EvExecutorLeased", "EvExecutorRelease", "EvTaskStarted", "EvToolUse", "EvMessage",
		"EvReviewed", "EvFixRound", "EvIntegrated", "EvNote", "EvLoopAttempt", "EvLoopEnded", "EvWarning",
		"EvAgentStarted", "EvExecutorPaused", "EvWorkerAssigned", "EvRefused", "EvPlanAdopted", "EvExecutorJoined"},
	// What the receipt seals.
	"receipt": {"EvExecutorLeased", "EvExecutorRelease", "EvPhase", "EvToolUse", "EvMessage", "EvReviewed", "EvFixRound",
		"EvViolation", "EvCommitted", "EvIntegrating", "EvNote", "EvLoopAttempt", "EvLoopEnded", "EvWarning",
		"EvAgentStarted", "EvExecutorPaused", "EvWorkerAssigned", "EvRateLimited", "EvRefused", "EvBlocked",
		"EvRaceStarted", "EvCandidateFinished", "EvRaceWon", "EvExecutorJoined"},
	// An attempt's record (muster logs).
	"runlog": {"EvRunStarted", "EvRunResumed", "EvExecutorLeased", "EvExecutorRelease", "EvTokensUsed", "EvIntegrating",
		"EvRunFinished", "EvRunInterrupted", "EvAgentStarted", "EvExecutorPaused", "EvWorkerAssigned", "EvRateLimited",
		"EvRefused", "EvTaskReopened", "EvRaceStarted", "EvCandidateFinished", "EvRaceWon", "EvExecutorJoined"},
	// The plain printer and the live view.
	"tui": {"EvExecutorLeased", "EvPhase", "EvTokensUsed", "EvCommitted", "EvIntegrated", "EvNote", "EvAgentStarted"},
}

// eventTypes are the names of the EventType constants of event.go.
func eventTypes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "event.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "EventType" {
				for _, n := range vs.Names {
					out = append(out, n.Name)
				}
			}
		}
	}
	return out
}

func TestEveryEventIsFoldedOrIgnored(t *testing.T) {
	t.Parallel()
	events := eventTypes(t)
	if len(events) < 30 {
		t.Fatalf("found %d event types in event.go", len(events))
	}
	for dir, ignored := range eventFolds {
		src := packageSource(t, dir)
		for _, ev := range events {
			named := regexp.MustCompile(`\bmuster\.` + ev + `\b`).MatchString(src)
			switch ignores := slices.Contains(ignored, ev); {
			case !named && !ignores:
				t.Errorf("%s/ neither folds %s nor lists it as ignored in eventFolds (eventfolds_test.go): fold it (CONTRIBUTING.md, a new event type) or say it is ignored", dir, ev)
			case named && ignores:
				// Not an error: a fold that starts naming an event is
				// what the list is for; the row is only out of date.
				t.Logf("%s/ names %s now: drop it from its ignored list in eventFolds (eventfolds_test.go)", dir, ev)
			}
		}
		for _, ev := range ignored {
			if !slices.Contains(events, ev) {
				t.Errorf("eventFolds[%q] lists %s, which event.go does not define", dir, ev)
			}
		}
	}
}

// packageSource is the text of a directory's non-test Go files.
func packageSource(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no Go files (%v)", dir, err)
	}
	var b strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(src)
	}
	return b.String()
}
