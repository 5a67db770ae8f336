package procid

import (
	"os"
	"strings"
	"testing"
)

func TestOwnIdentityChecksOut(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	me := Of(os.Getpid())
	if me.Start == 0 || me.Boot == "" {
		t.Fatalf("identity %+v", me)
	}
	if err := Check(me); err != nil {
		t.Errorf("own identity: %v", err)
	}
	me.Start--
	if err := Check(me); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Errorf("other start time: %v", err)
	}
	// Journals without an identity (older ones) cannot be checked.
	if err := Check(Of(-1)); err != nil {
		t.Errorf("unknown identity: %v", err)
	}
}
