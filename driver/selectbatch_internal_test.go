package driver

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// TestSelectBatchOnAPrefix: the queue's batch, chosen from a prefix of
// the waiting commits doubled until the window fills, is the one
// engine.SelectBatch chooses from the whole queue; and splitTaken keeps
// both halves in queue order.
func TestSelectBatchOnAPrefix(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 200).Draw(t, "waiting")
		window := rapid.IntRange(1, 12).Draw(t, "window")
		files := rapid.IntRange(1, 30).Draw(t, "files")
		d := &Driver{}
		cands := make([]engine.BatchCandidate, n)
		for i := range n {
			var owns []string
			if !rapid.Bool().Draw(t, fmt.Sprint("noOwns", i)) || i%7 != 0 {
				// Later commits touch more files: a prefix may not fill the window.
				owns = []string{fmt.Sprint(rapid.IntRange(1, 1+i*files/n).Draw(t, fmt.Sprint("owns", i)))}
			}
			task := &muster.Task{ID: muster.TaskID(fmt.Sprint("t", i)), Owns: owns}
			d.q.waiting = append(d.q.waiting, &integration{w: &worker{task: task}, seq: i})
			cands[i] = engine.BatchCandidate{Task: task.ID, Owns: owns}
		}
		d.opts.Overlap = func(a, b []string) bool { return a[0] == b[0] }
		want := engine.SelectBatch(cands, window, d.opts.Overlap)
		take := d.selectBatch(window)
		if !slices.Equal(take, want) {
			t.Fatalf("selectBatch = %v, SelectBatch on the whole queue = %v", take, want)
		}
		batch, rest := splitTaken(d.q.waiting, take)
		if len(batch)+len(rest) != n {
			t.Fatalf("split lost commits: %d + %d of %d", len(batch), len(rest), n)
		}
		for i, it := range batch {
			if it.seq != take[i] {
				t.Fatalf("batch[%d] is #%d, want #%d", i, it.seq, take[i])
			}
		}
		for i := 1; i < len(rest); i++ {
			if rest[i-1].seq >= rest[i].seq || slices.Contains(take, rest[i].seq) {
				t.Fatalf("rest out of order or holds a taken commit: %v", rest)
			}
		}
	})
}
