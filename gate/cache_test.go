package gate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/internal/proc"
)

// TestMain lets the test binary act as muster's confining launcher.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == muster.ConfineCommand {
		os.Exit(confine.Main(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

// TestConfinedGateHasItsOwnBuildCache: a confined gate's GOCACHE is the
// gates' own (git.GatesCache), writable to it and kept across runs; the
// user's shared cache is neither its GOCACHE nor writable to it; and an
// agent confined to its clone cannot write the gates' cache (so no
// forged entry of an agent's can pass a test never run).
func TestConfinedGateHasItsOwnBuildCache(t *testing.T) {
	if st := confine.Probe(); !st.Available() {
		t.Skip(st.Reason)
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp("/var/tmp", "muster-gate-cache-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	clone, shared := filepath.Join(root, "clones", "a-1"), filepath.Join(root, "user-go-build")
	for _, d := range []string{clone, shared} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("GOCACHE", shared)
	cache := filepath.Join(root, "repos", "k", "gates", "go-build")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	r := Runner{Confine: &muster.Confinement{Launcher: exe}, BuildCache: cache}
	for i := 0; i < 2; i++ {
		g := r.Run(context.Background(), clone, muster.GateSpec{Name: "go", Command: `echo "$GOCACHE"; touch "$GOCACHE/entry` + string(rune('0'+i)) + `" && echo wrote; touch "` + shared + `/forged" 2>/dev/null && echo SHARED`}, 0)
		want := cache
		if !strings.HasPrefix(g.Output, want+"\n") || !strings.Contains(g.Output, "wrote") || strings.Contains(g.Output, "SHARED") {
			t.Fatalf("run %d: %+v (want GOCACHE %s, writable; the shared cache not)", i, g, want)
		}
	}
	if n, _ := os.ReadDir(cache); len(n) != 2 {
		t.Errorf("the cache was not kept across gate runs: %v", n)
	}
	agent := &muster.Confinement{Launcher: exe, Writable: []string{clone}}
	var out strings.Builder
	res, err := proc.Run(context.Background(), proc.Spec{Argv: []string{"sh", "-c", `touch "$1/forged" 2>/dev/null && echo FORGED || echo refused`, "sh", cache},
		Dir: clone, Confine: agent, OnLine: func(l string) { out.WriteString(l + "\n") }})
	if err != nil || res.ExitCode != 0 || out.String() != "refused\n" {
		t.Errorf("an agent on the clone and the gates' cache: %q %+v %v", out.String(), res, err)
	}
}
