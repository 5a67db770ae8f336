package git

import (
	"os/exec"
	"testing"

	"github.com/muster-run/muster"
)

// A task ID the plan takes but git cannot end a ref component with
// (".." anywhere, a ".lock" suffix) still names a valid race ref, one of
// its own (distinct from the ID with '-' for '.', a task ID too).
func TestRaceRefOfAnOddTaskID(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	seen := map[string]muster.TaskID{}
	for _, id := range []muster.TaskID{"a.lock", "b..c", "c.", "a-lock", "plain", "v1.2"} {
		ref := RaceRef("run1", id, 1)
		if out, err := exec.Command("git", "check-ref-format", ref).CombinedOutput(); err != nil {
			t.Errorf("task %q: race ref %q is not a valid ref: %v %s", id, ref, err, out)
		}
		if other, dup := seen[ref]; dup {
			t.Errorf("tasks %q and %q share the race ref %q", id, other, ref)
		}
		seen[ref] = id
	}
	if got := RaceRef("run1", "v1.2", 3); got != "refs/muster/run1/race/v1.2/3" {
		t.Errorf("an ordinary ID's race ref changed: %q", got)
	}
}
