package git

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// The hooks and config --merge runs with are the user's own, so before it
// runs them muster checks they are the ones the run started with: an agent
// that changed them meanwhile (confinement off, guard off) must not get
// its program run in the user's work tree.

// hookState maps the files --merge depends on (config, config.worktree,
// hooks/*, relative to the common git directory) to a digest of their
// mode and content.
type hookState map[string]string

func readHookState(ctx context.Context, repo string) (hookState, error) {
	_, common, err := Root(ctx, repo)
	if err != nil {
		return nil, err
	}
	st := hookState{}
	files := []string{"config", "config.worktree", filepath.Join("info", "attributes")}
	ents, _ := os.ReadDir(filepath.Join(common, "hooks"))
	for _, e := range ents {
		files = append(files, filepath.Join("hooks", e.Name()))
	}
	for _, f := range files {
		p := filepath.Join(common, f)
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		h := sha256.New()
		fmt.Fprintf(h, "%v\n", fi.Mode())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			h.Write(b)
		} else if fi.Mode()&os.ModeSymlink != 0 {
			t, _ := os.Readlink(p)
			h.Write([]byte(t))
		}
		st[filepath.ToSlash(f)] = fmt.Sprintf("%x", h.Sum(nil))
	}
	return st, nil
}

// RecordHooks writes a digest of the repository's config and hooks to
// file, unless file exists (a resumed run keeps what its start saw).
func RecordHooks(ctx context.Context, repo, file string) error {
	if _, err := os.Stat(file); err == nil {
		return nil
	}
	st, err := readHookState(ctx, repo)
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	return writeFileAtomic(file, append(b, '\n'))
}

// HooksChanged compares the repository's config and hooks with the digest
// RecordHooks wrote and names each difference ("hooks/post-merge added").
// A missing record is an error: nothing to compare with.
func HooksChanged(ctx context.Context, repo, file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("the run recorded no config and hooks to compare with (%s)", file)
		}
		return nil, err
	}
	var was hookState
	if err := json.Unmarshal(b, &was); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	now, err := readHookState(ctx, repo)
	if err != nil {
		return nil, err
	}
	var diff []string
	for f, d := range now {
		switch w, ok := was[f]; {
		case !ok:
			diff = append(diff, ".git/"+f+" added")
		case w != d:
			diff = append(diff, ".git/"+f+" changed")
		}
	}
	for f := range was {
		if _, ok := now[f]; !ok {
			diff = append(diff, ".git/"+f+" removed")
		}
	}
	sort.Strings(diff)
	return diff, nil
}
