package driver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/gate"
)

// BenchmarkSetup: [setup] npm ci on a small Node project (one npm
// dependency). "pooled-unchanged" is SetupClone on a clone set up before
// with its lockfile unchanged (the per-task cost: hash the inputs, walk
// the outputs; target under 50 ms); "first" is muster's first setup of a
// fresh clone, beside "plain-npm-ci" in a fresh checkout. Needs npm and
// the npm registry (skipped without). One command:
//
//	go test ./driver -run '^$' -bench BenchmarkSetup -benchtime=10x
func BenchmarkSetup(b *testing.B) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		b.Skip("npm not installed")
	}
	home := b.TempDir()
	b.Setenv("HOME", home) // a scratch npm cache
	src := filepath.Join(b.TempDir(), "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "package.json"), []byte(`{"name": "b", "version": "1.0.0", "private": true, "dependencies": {"left-pad": "1.3.0", "is-number": "7.0.0"}}`), 0o644); err != nil {
		b.Fatal(err)
	}
	lock := exec.Command(npm, "install", "--package-lock-only", "--no-audit", "--no-fund")
	lock.Dir = src
	if out, err := lock.CombinedOutput(); err != nil {
		b.Skipf("the npm registry is not reachable: %v\n%s", err, out)
	}
	fresh := func() string {
		dir := filepath.Join(b.TempDir(), "clone")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for _, f := range []string{"package.json", "package-lock.json"} {
			data, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		return dir
	}
	cfg := &muster.Config{}
	in, ca, out := muster.SetupDefaults("npm ci")
	cfg.Setup = []muster.SetupStep{{Name: "node", Command: "npm ci --no-audit --no-fund", Inputs: in, Caches: ca, Outputs: out}}
	newDriver := func() *Driver { return &Driver{opts: Options{Gates: gate.Runner{}}} }
	ctx := context.Background()

	b.Run("pooled-unchanged", func(b *testing.B) {
		d, dir := newDriver(), fresh()
		if _, fail, err := d.SetupClone(ctx, dir, cfg); err != nil || fail != nil {
			b.Fatal(err, fail)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if ran, fail, err := d.SetupClone(ctx, dir, cfg); err != nil || fail != nil || len(ran) != 0 {
				b.Fatal(ran, fail, err)
			}
		}
	})
	b.Run("first", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			d, dir := newDriver(), fresh()
			b.StartTimer()
			if ran, fail, err := d.SetupClone(ctx, dir, cfg); err != nil || fail != nil || len(ran) != 1 {
				b.Fatal(ran, fail, err)
			}
		}
	})
	b.Run("plain-npm-ci", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			dir := fresh()
			b.StartTimer()
			c := exec.Command("sh", "-c", "npm ci --no-audit --no-fund")
			c.Dir = dir
			if out, err := c.CombinedOutput(); err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
		}
	})
}
