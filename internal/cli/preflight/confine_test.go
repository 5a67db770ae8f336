package preflight

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
)

// TestMain lets the test binary be the launcher ConfinementProbe starts
// (os.Executable), as the real binary is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == muster.ConfineCommand {
		os.Exit(confine.Main(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

// TestConfinementNamespaceLayer: where the namespaces are missing (here
// simulated), "required" refuses (exit 3) naming the layer, and "auto"
// confines with Landlock alone, says so once, and lets agents write the
// shared /tmp; where they exist, the sandbox hides the user's sockets and
// credentials.
func TestConfinementNamespaceLayer(t *testing.T) {
	if st := confine.Probe(); !st.Available() {
		t.Skip(st.Reason)
	}
	t.Setenv(confine.NoUserNSEnv, "1")
	_, _, err := Confinement(&muster.Config{Run: muster.RunConfig{Confine: muster.ConfineRequired}})
	if err == nil || muster.ErrorCode(err) != muster.CodeInternal || !strings.Contains(err.Error(), "namespaces") {
		t.Fatalf("required without namespaces: %v", err)
	}
	c, warnings, err := Confinement(&muster.Config{})
	if err != nil || c == nil || c.Namespaces {
		t.Fatalf("auto: %+v %v", c, err)
	}
	if n := countContaining(warnings, "namespaces: unavailable"); n != 1 || countContaining(warnings, "/tmp is shared") != 1 {
		t.Errorf("warnings %q", warnings)
	}
	if !contains(c.Writable, "/tmp") {
		t.Errorf("Landlock only, /tmp not writable: %q", c.Writable)
	}
	home, _ := os.UserHomeDir()
	if !contains(c.Hide, filepath.Join(home, ".ssh")) || contains(c.Hide, "/run") {
		t.Errorf("Landlock only: the hide list %q, want the credentials and no socket directory", c.Hide)
	}
	// A repository under /tmp: /tmp is not writable after all, and the
	// one warning says that instead of "shared" (issue 25: it said both,
	// in two warnings).
	c, warnings, err = Confinement(&muster.Config{}, "/tmp/repo")
	if err != nil || c == nil || contains(c.Writable, "/tmp") {
		t.Fatalf("repository under /tmp: %+v %v", c, err)
	}
	if len(warnings) != 1+countContaining(warnings, "as root") || countContaining(warnings, "/tmp is shared") != 0 ||
		countContaining(warnings, "/tmp is not writable to them, since it holds /tmp/repo: they write their own TMPDIR") != 1 {
		t.Errorf("warnings %q", warnings)
	}
	t.Setenv(confine.NoUserNSEnv, "")
	exe, _ := os.Executable()
	if r := confine.ProbeNamespaces(exe); r != "" {
		t.Skip(r)
	}
	c, warnings, err = Confinement(&muster.Config{Run: muster.RunConfig{Hide: []string{"/srv/secret"}}})
	if err != nil || c == nil || !c.Namespaces {
		t.Fatalf("with namespaces: %+v %v", c, err)
	}
	if contains(c.Writable, "/tmp") || !contains(c.Hide, "/run") || !contains(c.Hide, "/srv/secret") {
		t.Errorf("sandbox %+v", c)
	}
	// Where the sandbox exists nothing is said of /tmp at all.
	if countContaining(warnings, "namespaces: unavailable") != 0 || countContaining(warnings, "/tmp") != 0 {
		t.Errorf("warnings %q", warnings)
	}
}

func countContaining(list []string, s string) int {
	n := 0
	for _, x := range list {
		if strings.Contains(x, s) {
			n++
		}
	}
	return n
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestConfinementWarnsAsRoot (issue 21, item 4): as root the run's start
// warns, once, that muster runs as root and what that costs; not as root
// it says nothing of it.
func TestConfinementWarnsAsRoot(t *testing.T) {
	if st := confine.Probe(); !st.Available() {
		t.Skip(st.Reason)
	}
	root := os.Geteuid() == 0
	if (RootWarning() != "") != root {
		t.Fatalf("RootWarning() = %q at uid %d", RootWarning(), os.Geteuid())
	}
	_, warnings, err := Confinement(&muster.Config{})
	if err != nil {
		t.Fatal(err)
	}
	n := countContaining(warnings, "muster runs as root")
	if root && (n != 1 || !contains(warnings, RootWarning())) || !root && n != 0 {
		t.Errorf("uid %d: warnings %q", os.Geteuid(), warnings)
	}
}

// TestNamespacesWarningBelowABI6 (the red team's): without namespaces,
// below Landlock ABI 6 (no signal scoping) an agent can kill the
// launcher that ends what it leaves behind: the warning says so, and
// what ends such leftovers there; from ABI 6 it does not.
func TestNamespacesWarningBelowABI6(t *testing.T) {
	t.Parallel()
	if w := NamespacesWarning("no user namespaces", 4); !strings.Contains(w, "Landlock ABI 4, below 6") || !strings.Contains(w, "max_pids") {
		t.Errorf("ABI 4: %s", w)
	}
	if w := NamespacesWarning("no user namespaces", 6); strings.Contains(w, "below 6") {
		t.Errorf("ABI 6: %s", w)
	}
}
