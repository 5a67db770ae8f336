package git

import (
	"context"
	"fmt"
	"slices"
)

// maxChain is the most commits a start bundle made in process spans.
const maxChain = 64

// chainBundle writes, without a git process, the bundle of tip for a
// receiver that has one of have, when tip's parents reach it in at most
// maxChain single-parent commits (a run branch that moved by a few
// tasks' commits): each commit, and the trees and blobs it changes
// against its parent, each a delta against its parent's object at the
// same path where that is smaller. ok is false (nothing written) when
// the history is not such a chain: pack-objects then makes the bundle.
func chainBundle(ctx context.Context, b *Batch, tip string, have []string, out string) (ok bool, err error) {
	if len(tip) != 40 {
		return false, nil
	}
	var chain, trees []string // trees[i] is chain[i]'s tree
	c := tip
	for !slices.Contains(have, c) {
		if len(chain) == maxChain {
			return false, nil
		}
		tree, parents, err := commitInfo(ctx, b, "", c)
		if err != nil || len(parents) != 1 {
			return false, nil //nolint:nilerr // not a chain this can send: pack-objects decides
		}
		chain, trees = append(chain, c), append(trees, tree)
		c = parents[0]
	}
	if len(chain) == 0 {
		return false, nil
	}
	prereq := c
	base, _, err := commitInfo(ctx, b, "", prereq)
	if err != nil {
		return false, nil //nolint:nilerr // as above
	}
	// Oldest first: each commit's new objects against its parent's tree.
	objs := &objectSet{bases: map[string]string{}}
	for i := len(chain) - 1; i >= 0; i-- {
		objs.add(chain[i], "")
		if err := objs.newUnder(ctx, b, trees[i], base); err != nil {
			return false, err
		}
		base = trees[i]
	}
	return true, writeSetBundle(ctx, b, out, tip, prereq, objs)
}

// objectSet is the objects of a pack, in order, with the object each
// may be a delta against.
type objectSet struct {
	order []string
	bases map[string]string
}

func (s *objectSet) add(oid, base string) {
	if _, ok := s.bases[oid]; ok {
		return
	}
	s.order = append(s.order, oid)
	s.bases[oid] = base
}

// entries reads a tree's entries by name ("" is an empty tree).
func entries(ctx context.Context, b *Batch, tree string) ([]packEntry, error) {
	if tree == "" {
		return nil, nil
	}
	info, data, err := b.Contents(ctx, tree)
	if err != nil {
		return nil, err
	}
	if info.Type != "tree" {
		return nil, fmt.Errorf("%s is a %s, not a tree", tree, info.Type)
	}
	return parseTree(data, len(tree)/2)
}

// newUnder adds tree and every object under it that old (the parent's
// tree at the same path, "" for none) does not hold at the same path.
func (s *objectSet) newUnder(ctx context.Context, b *Batch, tree, old string) error {
	if tree == old {
		return nil
	}
	s.add(tree, old)
	te, err := entries(ctx, b, tree)
	if err != nil {
		return err
	}
	oe, err := entries(ctx, b, old)
	if err != nil {
		return err
	}
	was := byName(oe)
	for _, e := range te {
		o, had := was[e.name]
		switch {
		case had && o.oid == e.oid, e.mode == "160000":
			continue // unchanged, or a submodule's commit (not in this repository)
		case e.isTree():
			prev := ""
			if had && o.isTree() {
				prev = o.oid
			}
			if err := s.newUnder(ctx, b, e.oid, prev); err != nil {
				return err
			}
		default:
			prev := ""
			if had && !o.isTree() && o.mode != "160000" {
				prev = o.oid
			}
			s.add(e.oid, prev)
		}
	}
	return nil
}

// writeSetBundle writes the bundle of tip (prerequisite prereq) whose
// pack holds the objects of s, read through b.
func writeSetBundle(ctx context.Context, b *Batch, out, tip, prereq string, s *objectSet) error {
	return writePackBundle(out, tip, prereq, len(s.order), func(pw *packWriter) error {
		for _, oid := range s.order {
			info, body, err := b.Contents(ctx, oid)
			if err != nil {
				return err
			}
			if err := pw.objectOrDelta(ctx, b, info.Type, body, s.bases[oid]); err != nil {
				return err
			}
		}
		return nil
	})
}
