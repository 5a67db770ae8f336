package confine_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
)

// TestSandboxHidesRootsFilesAsRoot (issue 21, item 4): a uid-0 process
// without capabilities still reads what root owns, so as root the default
// hide list covers /root, /etc/shadow and /etc/gshadow: in the sandbox
// /etc/shadow cannot be opened and /root is empty, while the rest of
// /etc stays readable. Not as root, the list does not name them.
func TestSandboxHidesRootsFilesAsRoot(t *testing.T) {
	t.Parallel()
	hide := confine.DefaultHide("/nonexistent-home")
	for _, p := range confine.RootOnly {
		if slices.Contains(hide, p) != (os.Geteuid() == 0) {
			t.Errorf("DefaultHide holds %s: %v, running as uid %d", p, slices.Contains(hide, p), os.Geteuid())
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: nothing of root's to hide")
	}
	if _, err := os.ReadFile("/etc/shadow"); err != nil {
		t.Skipf("root cannot read /etc/shadow here either: %v", err)
	}
	marker := filepath.Join("/root", ".muster-rootonly-test")
	if err := os.WriteFile(marker, []byte("root's\n"), 0o600); err != nil {
		t.Skipf("cannot write in /root: %v", err)
	}
	t.Cleanup(func() { os.Remove(marker) })
	clone := hostTmp(t)
	out, _ := sandboxed(t, &muster.Confinement{Writable: []string{clone}, Hide: hide}, clone, `
		cat /etc/shadow >/dev/null 2>&1 && echo READ-SHADOW || echo no-shadow
		cat /etc/gshadow >/dev/null 2>&1 && echo READ-GSHADOW || echo no-gshadow
		cat "$MARKER" >/dev/null 2>&1 && echo READ-ROOT || echo no-root
		cat /etc/passwd >/dev/null 2>&1 && echo passwd-readable
	`, "MARKER="+marker)
	wantLines(t, out, "no-shadow", "no-gshadow", "no-root", "passwd-readable")
	if strings.Contains(out, "READ-") {
		t.Errorf("a root-owned file was read in the sandbox:\n%s", out)
	}
}
