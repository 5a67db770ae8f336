package preflight

import (
	"testing"

	"github.com/muster-run/muster"
)

func TestDefaultGuard(t *testing.T) {
	if g := DefaultGuard(&muster.Confinement{Launcher: "muster"}); g != muster.GuardOff {
		t.Errorf("confined: guard %q, want off (the user may commit while a run goes)", g)
	}
	if g := DefaultGuard(nil); g != muster.GuardRestore {
		t.Errorf("unconfined: guard %q, want restore", g)
	}
}
