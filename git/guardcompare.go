package git

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// compare finds and undoes changes since the snapshot; each returned
// reason names one ("tampered: refs/heads/main moved").
func (g *guard) compare(ctx context.Context) []string {
	cur, err := g.snapshot()
	if err != nil {
		return []string{"tampered: cannot read the repository's refs: " + err.Error()}
	}
	t := &tamper{restore: g.restore}
	g.compareRefs(ctx, cur, t)
	g.compareFiles(cur, t)
	g.compareLocks(cur, t)
	// The index: its entries, when its stat data changed.
	if !cur.index.same(g.base.index) {
		entries, err := g.indexEntries(ctx)
		if err == nil && entries != g.base.entries {
			t.add("%s changed (staged entries)", rel(g.top, filepath.Join(g.gitDir, "index")))
		}
		g.base.index, g.base.entries = cur.index, entries
	}
	return t.found
}

// tamper collects what compare found.
type tamper struct {
	found   []string
	restore bool // the guard undoes what it finds
}

func (t *tamper) add(format string, args ...any) {
	t.found = append(t.found, "tampered: "+fmt.Sprintf(format, args...))
}

// undone says whether a change was undone, when the guard undoes any.
func (t *tamper) undone(ok bool) string {
	if !t.restore {
		return ""
	}
	if ok {
		return " (undone)"
	}
	return " (not undone)"
}

// sortedKeys are the keys of a and b, sorted.
func sortedKeys[V any](a, b map[string]V) []string {
	names := map[string]bool{}
	for k := range a {
		names[k] = true
	}
	for k := range b {
		names[k] = true
	}
	out := make([]string, 0, len(names))
	for k := range names {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// compareRefs reports each ref created, deleted or moved, and puts back
// the ones it may.
func (g *guard) compareRefs(ctx context.Context, cur repoState, t *tamper) {
	for _, r := range sortedKeys(g.base.refs, cur.refs) {
		was, had := g.base.refs[r]
		now, has := cur.refs[r]
		if had == has && was == now {
			continue
		}
		head := !strings.HasPrefix(r, "refs/")
		what := "moved"
		switch {
		case !had:
			what = "created"
		case !has:
			what = "deleted"
		case head:
			what = "changed"
		}
		if head || strings.HasPrefix(was, "ref:") || strings.HasPrefix(now, "ref:") {
			// HEAD and symbolic refs are reported, not undone: the user
			// may have switched branches in their own work tree.
			t.add("%s %s (was %s, now %s)", r, what, orNone(was), orNone(now))
			g.adoptRef(r, now, has)
			continue
		}
		ok := g.restore && g.restoreRef(ctx, r, was, now, had, has)
		t.add("%s %s%s", r, what, t.undone(ok))
		if !ok {
			g.adoptRef(r, now, has)
		}
	}
}

// compareFiles reports each watched file added, removed or changed, and
// restores it when the guard may.
func (g *guard) compareFiles(cur repoState, t *tamper) {
	for _, p := range sortedKeys(g.base.files, cur.files) {
		was, now := g.base.files[p], cur.files[p]
		if was.same(now) || was.exists == now.exists && was.exists && bytes.Equal(was.data, now.data) && was.mode == now.mode && was.data != nil {
			if !was.same(now) {
				g.base.files[p] = now // touched, same content
			}
			continue
		}
		what := "changed"
		switch {
		case !was.exists:
			what = "added"
		case !now.exists:
			what = "removed"
		}
		ok := g.restore && restoreFile(p, was)
		t.add("%s %s%s", rel(g.top, p), what, t.undone(ok))
		if !ok {
			g.base.files[p] = now
		}
	}
}

// compareLocks reports lock files left behind. One a live git holds (the
// user's `git status`, say) or that goes away within a second is no
// one's leftover: not reported.
func (g *guard) compareLocks(cur repoState, t *tamper) {
	for p := range cur.locks {
		if g.base.locks[p] || openByAnyone(p) {
			continue
		}
		ok := g.restore && os.Remove(p) == nil
		t.add("%s left%s", rel(g.top, p), t.undone(ok))
		if !ok {
			g.base.locks[p] = true
		}
	}
}
