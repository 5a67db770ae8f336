package driver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

// A change padded past what a review prompt holds: the prompt shows the
// files that fit, whole, says how much it left out and names every file
// not shown; the review that approves it is no approval unless [run]
// review_partial = "allow".
func TestE2EPartialReviewIsNoApproval(t *testing.T) {
	for _, allow := range []bool{false, true} {
		name := "refuse"
		if allow {
			name = "allow"
		}
		t.Run(name, func(t *testing.T) {
			a := task("a", "pad.txt", "small.txt")
			a.Retries = 0
			p := &muster.Plan{Tasks: []*muster.Task{a}}
			coder := `set -e
awk 'BEGIN { for (i = 0; i < 4000; i++) print "padding line number " i }' > pad.txt
echo backdoor > small.txt
`
			reviewer := `set -e
cp "$MUSTER_PROMPT_FILE" "$SCRIPTS/review-prompt.md"
echo '{"type":"findings","findings":[]}'
`
			e := newE2E(t, p, map[string]string{}, coder, reviewer)
			if allow {
				e.opts.Config.Run.ReviewPartial = muster.ReviewPartialAllow
			}
			st := e.run(t)
			prompt, err := os.ReadFile(filepath.Join(e.opts.Config.Executors[1].Env["SCRIPTS"], "review-prompt.md"))
			if err != nil {
				t.Fatal(err)
			}
			pr := string(prompt)
			if !strings.Contains(pr, "small.txt") || !strings.Contains(pr, "+backdoor") {
				t.Errorf("the small file is not shown whole:\n%.2000s", pr)
			}
			if !strings.Contains(pr, "## Not shown above") || !strings.Contains(pr, "in 1 files") || !strings.Contains(pr, "\n  pad.txt\n") ||
				!strings.Contains(pr, "/in/change.diff") || strings.Contains(pr, "padding line number 3999") {
				t.Errorf("the prompt does not say what it left out:\n%.600s", pr[strings.Index(pr, "## Not shown"):])
			}
			ts := st.Tasks["a"]
			if allow {
				if ts.State != muster.StateSucceeded {
					t.Fatalf("a %s: %s", ts.State, ts.Reason)
				}
				if ws := e.events(muster.EvWarning); len(ws) == 0 || !strings.Contains(ws[len(ws)-1].Message, "approved on part of the change") {
					t.Errorf("no warning of a partial approval: %+v", ws)
				}
				return
			}
			if ts.State != muster.StateFailed || !strings.Contains(ts.Reason, "review saw part of the change") || !strings.Contains(ts.Reason, "pad.txt") {
				t.Fatalf("a %s: %q, want a failure naming the partial review", ts.State, ts.Reason)
			}
		})
	}
}
