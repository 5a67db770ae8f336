//go:build linux

package confine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

// TestSandboxReadOnlyBindStaysReadOnly: the user's repository, bound
// back read-only, cannot be made writable from the sandbox, not even
// from a user namespace of the program's own (unshare -Urm gives it every
// capability there): Landlock forbids a confined process any mount, and
// the bind's read-only flag is locked in a namespace made below it.
func TestSandboxReadOnlyBindStaysReadOnly(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare")
	}
	root := hostTmp(t)
	clone, repo := filepath.Join(root, "clone"), filepath.Join(root, "repo")
	for _, d := range []string{clone, repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := sandboxed(t, &muster.Confinement{Writable: []string{clone}, ReadOnly: []string{repo}}, clone, `
		mount -o remount,rw,bind "$REPO" 2>/dev/null && echo REMOUNTED || echo no-remount
		unshare -Urm sh -c 'mount -o remount,rw,bind "$REPO" && echo x > "$REPO/main.go" && echo NESTED-WROTE' 2>/dev/null || echo no-nested-remount
		unshare -Urm sh -c 'umount -l "$REPO" && echo x > "$REPO/main.go" && echo UNMOUNTED-WROTE' 2>/dev/null || echo no-umount
	`, "REPO="+repo)
	wantLines(t, out, "no-remount", "no-nested-remount", "no-umount")
	if strings.Contains(out, "REMOUNTED") || strings.Contains(out, "WROTE") {
		t.Errorf("the read-only bind was made writable:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "main.go")); string(b) != "host\n" {
		t.Errorf("the repository changed: %q", b)
	}
}
