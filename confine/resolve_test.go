package confine

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestPropertyResolverIsEvalSymlinks: on random trees of directories,
// files and symlinks (relative, absolute, through "..", dangling, in
// loops, to files), the resolver stage one uses gives for every path
// what filepath.EvalSymlinks gives (the same path, or an error where it
// fails), whatever it resolved before; and existing keeps exactly the
// paths EvalSymlinks resolves, once each, in order.
func TestPropertyResolverIsEvalSymlinks(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	rapid.Check(t, func(rt *rapid.T) {
		root, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			rt.Fatal(err)
		}
		var made []string
		for i, n := 0, rapid.IntRange(1, 14).Draw(rt, "entries"); i < n; i++ {
			dir := root
			if len(made) > 0 && rapid.Bool().Draw(rt, "nested") {
				dir = rapid.SampledFrom(made).Draw(rt, "in")
			}
			p := filepath.Join(dir, rapid.SampledFrom(names).Draw(rt, "name"))
			switch rapid.IntRange(0, 2).Draw(rt, "kind") {
			case 0:
				_ = os.Mkdir(p, 0o755)
			case 1:
				_ = os.WriteFile(p, nil, 0o644)
			default:
				_ = os.Symlink(linkTarget(rt, root, names), p)
			}
			made = append(made, p)
		}
		r := newResolver()
		var queries, want []string
		for i, n := 0, rapid.IntRange(1, 12).Draw(rt, "queries"); i < n; i++ {
			q := root
			for j, k := 0, rapid.IntRange(0, 4).Draw(rt, "depth"); j < k; j++ {
				q = filepath.Join(q, rapid.SampledFrom(names).Draw(rt, "part"))
			}
			queries = append(queries, q)
			ref, refErr := filepath.EvalSymlinks(q)
			got, gotErr := r.resolve(q)
			if (refErr == nil) != (gotErr == nil) || got != ref {
				rt.Fatalf("resolve(%s) = %q, %v; EvalSymlinks: %q, %v", q, got, gotErr, ref, refErr)
			}
			if refErr == nil && !slices.Contains(want, ref) {
				want = append(want, ref)
			}
		}
		if got := newResolver().existing(queries); !slices.Equal(got, want) {
			rt.Fatalf("existing(%q) = %q, want %q", queries, got, want)
		}
	})
}

// linkTarget draws a symlink's target: relative (possibly through ".."),
// absolute within root, or absolute outside anything made.
func linkTarget(rt *rapid.T, root string, names []string) string {
	parts := rapid.SliceOfN(rapid.SampledFrom(append([]string{"..", "."}, names...)), 1, 3).Draw(rt, "target")
	switch rapid.IntRange(0, 2).Draw(rt, "form") {
	case 0:
		return filepath.Join(parts...)
	case 1:
		return filepath.Join(append([]string{root}, parts...)...)
	default:
		return filepath.Join(root, "absent", parts[0])
	}
}

// TestResolverLeavesUncleanPathsToEvalSymlinks: a path that is not clean
// (a ".." after a symlink means the link's parent, not the lexical one)
// is resolved the slow way, as EvalSymlinks resolves it.
func TestResolverLeavesUncleanPathsToEvalSymlinks(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "x", "y"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "x", "y"), filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	q := root + "/l/../y"
	got, err := newResolver().resolve(q)
	if err != nil || got != filepath.Join(root, "x", "y") {
		t.Fatalf("resolve(%s) = %q, %v; want %s", q, got, err, filepath.Join(root, "x", "y"))
	}
}
