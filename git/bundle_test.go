package git

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func size(t *testing.T, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestBundleRoundTrip: the base goes to a worker's host as a bundle, the
// agent's change comes back as one commit on it and lands in another
// worktree as the same change; the next base travels as only what is new.
// With the long-lived helpers (Batches) the same holds, each bundle's
// commit is read by the one helper of its repository (which sees the
// objects of a bundle received after it started), and no more start.
func TestBundleRoundTrip(t *testing.T) {
	t.Run("processes", func(t *testing.T) { bundleRoundTrip(t, nil, nil) })
	t.Run("helpers", func(t *testing.T) {
		hb, ob := NewBatches(), NewBatches()
		bundleRoundTrip(t, hb, ob)
		if n, _ := hb.Close(); n != 1 {
			t.Errorf("the host's helpers started %d processes, want 1 (its one store)", n)
		}
		if n, _ := ob.Close(); n != 1 {
			t.Errorf("the orchestrator's helpers started %d processes, want 1", n)
		}
	})
}

func bundleRoundTrip(t *testing.T, hb, ob *Batches) {
	ctx := context.Background()
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("src/f%03d.txt", i)] = strings.Repeat(fmt.Sprintf("line %d of a file that compresses only so well\n", i), 40)
	}
	repo := newRepo(t, files)
	base := g(t, repo, "rev-parse", "HEAD")
	root, err := RootCommit(ctx, repo, base)
	if err != nil || root != base {
		t.Fatalf("root %s, %v", root, err)
	}
	tmp := t.TempDir()
	h := &Host{Root: filepath.Join(tmp, "host"), Batches: hb}
	if h.Has(ctx, root, base) {
		t.Fatal("an empty host has the base")
	}
	first := filepath.Join(tmp, "first.bundle")
	if err := WriteBundle(ctx, repo, base, h.Tips(ctx, root), first); err != nil {
		t.Fatal(err)
	}
	if got, err := h.Receive(ctx, root, first); err != nil || got != base {
		t.Fatalf("receive: %s, %v", got, err)
	}
	dir, err := h.Checkout(ctx, root, "sh", 1, base)
	if err != nil {
		t.Fatal(err)
	}
	// The agent: edits, adds, deletes, and leaves an ignored-looking
	// untracked file too.
	write(t, dir, "src/f001.txt", "changed\n")
	write(t, dir, "new/added.txt", "added\n")
	if err := os.Remove(filepath.Join(dir, "src/f002.txt")); err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(tmp, "back.bundle")
	commit, changed, err := h.Result(ctx, root, "sh", 1, base, back)
	if err != nil || !changed {
		t.Fatalf("result: %s %v %v", commit, changed, err)
	}
	if n := size(t, back); n > 4096 {
		t.Errorf("the result bundle of a three-file change is %d bytes", n)
	}
	// The orchestrator's side: a worktree at base takes the change.
	orch := filepath.Join(tmp, "orch")
	g(t, tmp, "clone", "-q", "--no-hardlinks", repo, orch)
	tip, ps, err := Bundles{Batches: ob}.ReadBundle(ctx, orch, back)
	if err != nil || tip != commit {
		t.Fatalf("read bundle: %s, %v", tip, err)
	}
	if len(ps) != 1 || ps[0] != base {
		t.Fatalf("parents %v", ps)
	}
	if err := Apply(ctx, orch, base, tip); err != nil {
		t.Fatal(err)
	}
	if got := g(t, orch, "status", "--porcelain", "--untracked-files=all"); got != "M src/f001.txt\nD  src/f002.txt\n?? new/added.txt" && got != " M src/f001.txt\nD  src/f002.txt\n?? new/added.txt" {
		// checkout writes the index for the files it writes; rm too.
		if !strings.Contains(got, "src/f001.txt") || !strings.Contains(got, "src/f002.txt") || !strings.Contains(got, "new/added.txt") {
			t.Errorf("status after apply:\n%s", got)
		}
	}
	if read(t, orch, "src/f001.txt") != "changed\n" || read(t, orch, "new/added.txt") != "added\n" {
		t.Error("apply did not write the change")
	}
	if _, err := os.Stat(filepath.Join(orch, "src/f002.txt")); !os.IsNotExist(err) {
		t.Error("apply did not delete src/f002.txt")
	}
	// Nothing changed: no bundle.
	if _, err := h.Checkout(ctx, root, "sh", 1, base); err != nil {
		t.Fatal(err)
	}
	if c, changed, err := h.Result(ctx, root, "sh", 1, base, filepath.Join(tmp, "none.bundle")); err != nil || changed || c != base {
		t.Errorf("an unchanged clone: %s %v %v", c, changed, err)
	}
	// The next base: one more commit; the bundle against the host's tips
	// holds only it.
	write(t, repo, "src/f003.txt", "next\n")
	g(t, repo, "commit", "-qam", "next")
	next := g(t, repo, "rev-parse", "HEAD")
	second := filepath.Join(tmp, "second.bundle")
	if err := WriteBundle(ctx, repo, next, h.Tips(ctx, root), second); err != nil {
		t.Fatal(err)
	}
	if a, b := size(t, first), size(t, second); b*20 > a {
		t.Errorf("incremental bundle %d bytes against a first one of %d", b, a)
	}
	if got, err := h.Receive(ctx, root, second); err != nil || got != next {
		t.Fatalf("receive next: %s, %v", got, err)
	}
	if !h.Has(ctx, root, next) || len(h.Tips(ctx, root)) != 2 {
		t.Errorf("tips %v", h.Tips(ctx, root))
	}
}

// TestHostIgnoresPlantedConfig: hooks, an fsmonitor and a filter an agent
// writes into its clone's git directory never run in muster's calls.
func TestHostIgnoresPlantedConfig(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, map[string]string{"a.txt": "a\n", ".gitattributes": "*.txt filter=evil\n"})
	base := g(t, repo, "rev-parse", "HEAD")
	tmp := t.TempDir()
	h := &Host{Root: filepath.Join(tmp, "host")}
	b := filepath.Join(tmp, "b.bundle")
	if err := WriteBundle(ctx, repo, base, nil, b); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Receive(ctx, base, b); err != nil {
		t.Fatal(err)
	}
	dir, err := h.Checkout(ctx, base, "sh", 1, base)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(tmp, "ran")
	evil := "#!/bin/sh\necho ran >> " + marker + "\ncat\n"
	write(t, dir, ".git/hooks/post-checkout", evil)
	write(t, dir, ".git/evil.sh", evil)
	for _, p := range []string{".git/hooks/post-checkout", ".git/evil.sh"} {
		if err := os.Chmod(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, ".git", "config")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "[core]\n\tfsmonitor = %s\n\thooksPath = %s\n[filter \"evil\"]\n\tclean = %s\n\tsmudge = %s\n",
		filepath.Join(dir, ".git/evil.sh"), filepath.Join(dir, ".git/hooks"), filepath.Join(dir, ".git/evil.sh"), filepath.Join(dir, ".git/evil.sh"))
	f.Close()
	write(t, dir, "a.txt", "changed\n")
	if _, _, err := h.Result(ctx, base, "sh", 1, base, filepath.Join(tmp, "r.bundle")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Checkout(ctx, base, "sh", 1, base); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("a program the agent planted ran: %s", read(t, tmp, "ran"))
	}
}

// TestReadBundleRefuses: a bundle that is not one of muster's (several
// refs, another ref, garbage, a truncated pack) is refused.
func TestReadBundleRefuses(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, nil)
	base := g(t, repo, "rev-parse", "HEAD")
	tmp := t.TempDir()
	good := filepath.Join(tmp, "good.bundle")
	if err := WriteBundle(ctx, repo, base, nil, good); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	hdr := "# v2 git bundle\n" + base + " " + bundleRef + "\n\n"
	for name, body := range map[string]string{
		"two refs":  "# v2 git bundle\n" + base + " " + bundleRef + "\n" + base + " refs/heads/main\n\n" + string(data[len(hdr):]),
		"other ref": "# v2 git bundle\n" + base + " refs/heads/main\n\n" + string(data[len(hdr):]),
		"garbage":   "not a bundle",
		"truncated": string(data[:len(data)-30]),
	} {
		p := filepath.Join(tmp, strings.ReplaceAll(name, " ", "-")+".bundle")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(tmp, "dst-"+strings.ReplaceAll(name, " ", "-"))
		g(t, tmp, "init", "-q", "--bare", dst)
		if tip, _, err := ReadBundle(ctx, dst, p); err == nil {
			t.Errorf("%s: read as %s", name, tip)
		}
	}
}

// TestWriteBundleUnknownHave: a have the repository does not know (a
// worker's tip from another run, say) is left out, not an error.
func TestWriteBundleUnknownHave(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, nil)
	base := g(t, repo, "rev-parse", "HEAD")
	write(t, repo, "b.txt", "b\n")
	g(t, repo, "add", "b.txt")
	g(t, repo, "commit", "-qm", "b")
	tip := g(t, repo, "rev-parse", "HEAD")
	out := filepath.Join(t.TempDir(), "b.bundle")
	if err := WriteBundle(ctx, repo, tip, []string{strings.Repeat("e", 40), base}, out); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dst.git")
	g(t, t.TempDir(), "init", "-q", "--bare", dst)
	// dst lacks base: a bundle that needs it is refused there ...
	if _, _, err := ReadBundle(ctx, dst, out); err == nil {
		t.Fatal("a bundle whose prerequisite is missing was read")
	}
	// ... and one on nothing but unknown haves holds everything.
	if err := WriteBundle(ctx, repo, tip, []string{strings.Repeat("e", 40)}, out); err != nil {
		t.Fatal(err)
	}
	if got, _, err := ReadBundle(ctx, dst, out); err != nil || got != tip {
		t.Fatalf("full bundle: %s %v", got, err)
	}
}

// TestSnapshot: a worktree's whole state (edits, additions, deletions)
// as one commit on parent, its index and HEAD untouched.
func TestSnapshot(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	base := g(t, repo, "rev-parse", "HEAD")
	write(t, repo, "a.txt", "A\n")
	write(t, repo, "c/new.txt", "new\n")
	if err := os.Remove(filepath.Join(repo, "b.txt")); err != nil {
		t.Fatal(err)
	}
	before := g(t, repo, "status", "--porcelain")
	snap, err := Snapshot(ctx, repo, base)
	if err != nil {
		t.Fatal(err)
	}
	if got := g(t, repo, "diff-tree", "-r", "--name-status", "--no-commit-id", base, snap); got != "M\ta.txt\nD\tb.txt\nA\tc/new.txt" {
		t.Errorf("snapshot change:\n%s", got)
	}
	if g(t, repo, "rev-parse", snap+"^") != base || g(t, repo, "rev-parse", "HEAD") != base {
		t.Error("snapshot parent or HEAD")
	}
	if after := g(t, repo, "status", "--porcelain"); after != before {
		t.Errorf("the worktree's index changed:\n%s\nwas\n%s", after, before)
	}
}

// TestTreeDiffIsDiffTree: the change a returned commit makes, read
// through the long-lived helper, is the one `git diff-tree -r` lists
// (edits, additions, deletions, a file that becomes a directory and a
// directory that becomes a file, a mode change), and Bundles.Apply
// writes it as Apply does.
func TestTreeDiffIsDiffTree(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, map[string]string{"a.txt": "a\n", "b/c.txt": "c\n", "b/d/e.txt": "e\n", "f": "f\n", "run.sh": "echo\n", "gone/x.txt": "x\n"})
	base := g(t, repo, "rev-parse", "HEAD")
	write(t, repo, "a.txt", "a2\n")
	g(t, repo, "rm", "-rq", "f", "b/d", "gone")
	write(t, repo, "f/inside.txt", "now a directory\n")
	write(t, repo, "b/d", "now a file\n")
	write(t, repo, "new/deep/n.txt", "n\n")
	g(t, repo, "update-index", "--chmod=+x", "run.sh")
	g(t, repo, "add", "-A")
	g(t, repo, "commit", "-qm", "change")
	tip := g(t, repo, "rev-parse", "HEAD")
	wc, wd, err := ChangedPaths(ctx, repo, base, tip)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBatch(repo)
	defer b.Close()
	gc, gd, err := treeDiff(ctx, b, base, tip)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(gc)
	sort.Strings(gd)
	sort.Strings(wc)
	sort.Strings(wd)
	if fmt.Sprint(gc) != fmt.Sprint(wc) || fmt.Sprint(gd) != fmt.Sprint(wd) {
		t.Fatalf("treeDiff changed %v deleted %v; diff-tree changed %v deleted %v", gc, gd, wc, wd)
	}
	orch := filepath.Join(t.TempDir(), "orch")
	g(t, repo, "worktree", "add", "-q", "--detach", orch, base)
	bs := Bundles{Batches: NewBatches()}
	defer bs.Close()
	if err := bs.Apply(ctx, orch, base, tip); err != nil {
		t.Fatal(err)
	}
	g(t, orch, "add", "-A")
	if got := g(t, orch, "write-tree"); got != g(t, repo, "rev-parse", tip+"^{tree}") {
		t.Errorf("the applied worktree's tree %s is not the commit's", got)
	}
}

// TestChainBundle: a start that is a few single-parent commits on what
// the host has travels as a bundle made in process (each commit's new
// trees and blobs, deltas against its parent's where smaller), which the
// host's checked unpack takes; a history that is not such a chain is
// left to pack-objects.
func TestChainBundle(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("src/f%03d.txt", i)] = strings.Repeat(fmt.Sprintf("line %d\n", i), 50)
	}
	repo := newRepo(t, files)
	base := g(t, repo, "rev-parse", "HEAD")
	tmp := t.TempDir()
	h := &Host{Root: filepath.Join(tmp, "host"), Batches: NewBatches()}
	defer h.Close()
	first := filepath.Join(tmp, "first.bundle")
	if err := WriteBundle(ctx, repo, base, nil, first); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Receive(ctx, base, first); err != nil {
		t.Fatal(err)
	}
	write(t, repo, "src/f001.txt", strings.Repeat("line 1\n", 49)+"edited\n")
	g(t, repo, "commit", "-qam", "one")
	write(t, repo, "new/dir/n.txt", "n\n")
	g(t, repo, "rm", "-q", "src/f002.txt")
	g(t, repo, "add", "-A")
	g(t, repo, "commit", "-qm", "two")
	g(t, repo, "mv", "new", "moved")
	g(t, repo, "commit", "-qm", "three")
	tip := g(t, repo, "rev-parse", "HEAD")
	b := NewBatch(repo)
	defer b.Close()
	out := filepath.Join(tmp, "chain.bundle")
	ok, err := chainBundle(ctx, b, tip, h.Tips(ctx, base), out)
	if err != nil || !ok {
		t.Fatalf("chainBundle: %v %v", ok, err)
	}
	if n := size(t, out); n > 2048 {
		t.Errorf("the bundle of three small commits is %d bytes", n)
	}
	if got, err := h.Receive(ctx, base, out); err != nil || got != tip {
		t.Fatalf("receive: %s %v", got, err)
	}
	dir, err := h.Checkout(ctx, base, "sh", 1, tip)
	if err != nil {
		t.Fatal(err)
	}
	if read(t, dir, "moved/dir/n.txt") != "n\n" || !strings.HasSuffix(read(t, dir, "src/f001.txt"), "edited\n") {
		t.Error("the checkout of the chain's tip is not the tip")
	}
	// A merge on the way: not a chain.
	g(t, repo, "checkout", "-qb", "side", base)
	write(t, repo, "side.txt", "s\n")
	g(t, repo, "add", "-A")
	g(t, repo, "commit", "-qm", "side")
	g(t, repo, "checkout", "-q", "-")
	g(t, repo, "merge", "-q", "--no-edit", "side")
	if ok, err := chainBundle(ctx, b, g(t, repo, "rev-parse", "HEAD"), []string{tip}, filepath.Join(tmp, "merge.bundle")); ok || err != nil {
		t.Errorf("a merge made a chain bundle: %v %v", ok, err)
	}
}

// TestDeltaRoundTrip: the deltas chainBundle and a result write are
// read back to their target by the worker's in-process unpack, across
// copies longer than one instruction; a delta that reads past its base
// is refused.
func TestDeltaRoundTrip(t *testing.T) {
	big := []byte(strings.Repeat("0123456789abcdef", 1<<13)) // 128 KiB
	for _, c := range []struct{ base, target []byte }{
		{[]byte("hello world\n"), []byte("hello there world\n")},
		{big, append(append(append([]byte(nil), big[:70000]...), "inserted"...), big[70000:]...)},
		{big, big[:1000]},
		{[]byte(""), []byte("new")},
		{[]byte("same"), []byte("same")},
	} {
		d := headTailDelta(c.base, c.target)
		got, err := applyDelta(c.base, d)
		if err != nil || !bytes.Equal(got, c.target) {
			t.Errorf("delta of %d bytes on %d: %v", len(c.target), len(c.base), err)
		}
	}
	if _, err := applyDelta([]byte("abc"), []byte{3, 10, 0x91, 2, 10}); err == nil {
		t.Error("a copy past the base's end was taken")
	}
}
