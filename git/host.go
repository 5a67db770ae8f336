package git

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/muster-run/muster/internal/exchange"
)

// Host keeps a fleet worker's repositories: one object store per
// repository (named by its root commit) that receives the bundles, and
// one clone per executor clone that borrows the store's objects. Agents
// work in the clones; muster rewrites a clone's config, hooks and info
// before each of its own calls there, so nothing an agent planted runs.
type Host struct {
	Root string
	// Batches, when set, reads the commits of received bundles through
	// the long-lived helper of each store (no git process per bundle);
	// Close stops them.
	Batches *Batches

	mu    sync.Mutex        // serialises store updates; guards trees
	trees map[string]string // commit -> its tree, as learnt
}

// Close stops the host's long-lived helpers.
func (h *Host) Close() error {
	h.Batches.Close()
	return nil
}

// maxTips bounds the tips a store remembers as "have" for the next bundle.
const maxTips = 16

func (h *Host) store(repo string) string { return filepath.Join(h.Root, "repos", repo+".git") }

// tipsFile lists a store's tips, newest first. The store is muster's
// alone and never collected, so its objects stay without refs.
func (h *Host) tipsFile(repo string) string { return filepath.Join(h.Root, "repos", repo+".tips") }

func (h *Host) ensureStore(ctx context.Context, repo string) (string, error) {
	if !isObjectID(repo) {
		return "", fmt.Errorf("bad repository key %q", repo)
	}
	dir := h.store(repo)
	if _, err := os.Stat(filepath.Join(dir, "objects")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	if _, err := run(ctx, safeCmd("", "init", "-q", "--bare", dir)); err != nil {
		return "", err
	}
	return dir, nil
}

func (h *Host) readTips(repo string) []string {
	b, err := os.ReadFile(h.tipsFile(repo))
	if err != nil {
		return nil
	}
	var tips []string
	if json.Unmarshal(b, &tips) != nil {
		return nil
	}
	return tips
}

// Has reports whether the store of repo received commit (among its
// last tips: the commits a job starts from are always received ones).
func (h *Host) Has(ctx context.Context, repo, commit string) bool {
	if !isObjectID(repo) || !isObjectID(commit) {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.readTips(repo) {
		if t == commit {
			return true
		}
	}
	return false
}

// Tips returns the commits the store of repo received last (newest
// first): an orchestrator leaves them out of the next bundle.
func (h *Host) Tips(ctx context.Context, repo string) []string {
	if !isObjectID(repo) {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.readTips(repo)
}

// Receive stores a bundle's objects in the store of repo and remembers
// its commit as a tip.
func (h *Host) Receive(ctx context.Context, repo, bundle string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	dir, err := h.ensureStore(ctx, repo)
	if err != nil {
		return "", err
	}
	tip, tree, _, err := readBundle(ctx, h.Batches.get(dir), dir, bundle, true)
	if err != nil {
		return "", err
	}
	h.learn(tip, tree)
	tips := []string{tip}
	for _, t := range h.readTips(repo) {
		if t != tip {
			tips = append(tips, t)
		}
	}
	if len(tips) > maxTips {
		tips = tips[:maxTips]
	}
	b, _ := json.Marshal(tips)
	if err := os.WriteFile(h.tipsFile(repo), b, 0o644); err != nil {
		return "", err
	}
	return tip, nil
}

// learn remembers a commit's tree; the caller holds mu.
func (h *Host) learn(commit, tree string) {
	if h.trees == nil {
		h.trees = map[string]string{}
	}
	if len(h.trees) > 4096 {
		clear(h.trees)
	}
	h.trees[commit] = tree
}

// treeOf returns commit's tree from what the host learnt, else from git.
func (h *Host) treeOf(ctx context.Context, dir, commit string) (string, error) {
	h.mu.Lock()
	t, ok := h.trees[commit]
	h.mu.Unlock()
	if ok {
		return t, nil
	}
	t, _, err := commitInfo(ctx, h.Batches.get(dir), dir, commit)
	if err != nil {
		return "", err
	}
	h.mu.Lock()
	h.learn(commit, t)
	h.mu.Unlock()
	return t, nil
}

// CloneDir is where clone n of an executor works on repo.
func (h *Host) CloneDir(repo, executor string, n int) string {
	return filepath.Join(h.Root, "clones", repo, executor+"-"+strconv.Itoa(n))
}

// savedIndex is where muster keeps, outside the clone, the index its
// checkout wrote: a stat cache no agent can touch.
func (h *Host) savedIndex(repo, executor string, n int) string {
	return filepath.Join(h.Root, "index", repo, executor+"-"+strconv.Itoa(n))
}

// cloneGit runs git in a clone with its git directory named explicitly.
func cloneGit(dir string, args ...string) cmd {
	c := safeCmd(dir, args...)
	c.env = []string{"GIT_DIR=" + filepath.Join(dir, ".git"), "GIT_WORK_TREE=" + dir}
	return c
}

// cloneConfig is a clone's whole config: muster writes it before its own
// calls, so a filter, fsmonitor, hooks path or worktree an agent set is gone.
const cloneConfig = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = false\n[gc]\n\tauto = 0\n"

// Checkout makes clone n of executor hold commit of repo, cleaned of
// everything else (untracked and ignored files too); it is created on
// first use. It returns the clone's directory.
func (h *Host) Checkout(ctx context.Context, repo, executor string, n int, commit string) (string, error) {
	store := h.store(repo)
	dir := h.CloneDir(repo, executor, n)
	gd := filepath.Join(dir, ".git")
	if st, err := os.Lstat(gd); err != nil || !st.IsDir() {
		if err := os.RemoveAll(dir); err != nil {
			return "", err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		if _, err := run(ctx, safeCmd(dir, "init", "-q", dir)); err != nil {
			return "", err
		}
	}
	if err := scrubGitDir(gd, filepath.Join(store, "objects")); err != nil {
		return "", err
	}
	for _, args := range [][]string{
		{"checkout", "--force", "--detach", "--quiet", "--no-recurse-submodules", commit},
		{"clean", "-ffdxq"},
	} {
		if _, err := run(ctx, cloneGit(dir, args...)); err != nil {
			return "", err
		}
	}
	saved := h.savedIndex(repo, executor, n)
	if err := os.MkdirAll(filepath.Dir(saved), 0o755); err != nil {
		return "", err
	}
	if err := copyIndex(filepath.Join(gd, "index"), saved); err != nil {
		return "", err
	}
	return dir, nil
}

// scrubGitDir rewrites what of a clone's git directory could make git run
// a program or look elsewhere: config, hooks, info, alternates; and drops
// an agent's leftover operations and locks. Every step goes through a
// root opened on gd and replaces what it finds, never writes through it:
// the agent may have left any of these names a link (to a file of the
// user's, out of the clone) or a hard link it keeps a second name of.
func scrubGitDir(gd, objects string) error {
	if st, err := os.Lstat(gd); err != nil || !st.IsDir() {
		return fmt.Errorf("clone's git directory %s is gone or not a directory", gd)
	}
	root, err := os.OpenRoot(gd)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, d := range []string{"objects", "objects/info"} {
		if st, err := root.Lstat(d); err == nil && !st.IsDir() {
			if err := rootRemoveAll(root, d); err != nil {
				return err
			}
		}
	}
	for _, f := range []string{"hooks", "info", "config.worktree", "commondir", "index.lock", "HEAD.lock",
		"rebase-merge", "rebase-apply", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "sequencer", "objects/info/alternates"} {
		if err := rootRemoveAll(root, f); err != nil {
			return err
		}
	}
	if err := root.MkdirAll(filepath.Join("objects", "info"), 0o755); err != nil {
		return err
	}
	if err := replaceIn(root, filepath.Join("objects", "info", "alternates"), []byte(objects+"\n")); err != nil {
		return err
	}
	return replaceIn(root, "config", []byte(cloneConfig))
}

// replaceIn writes name inside root as the exchange writes every file an
// agent can reach: a fresh file renamed over it, so a link or a hard link
// found at name is replaced, never written through. A directory left at
// name is removed first.
func replaceIn(root *os.Root, name string, data []byte) error {
	if st, err := root.Lstat(name); err == nil && st.IsDir() {
		if err := rootRemoveAll(root, name); err != nil {
			return err
		}
	}
	return exchange.WriteFileIn(root, name, data, 0o644)
}

// Result records what the clone's work tree holds as a commit on start
// and writes a bundle of it (start is its prerequisite) to out. changed
// is false, and no bundle is written, when the work tree holds start.
// The state is read through a copy of the index muster's checkout wrote
// (never the agent's own index), so only the work tree counts.
func (h *Host) Result(ctx context.Context, repo, executor string, n int, start, out string) (commit string, changed bool, err error) {
	dir := h.CloneDir(repo, executor, n)
	if err := scrubGitDir(filepath.Join(dir, ".git"), filepath.Join(h.store(repo), "objects")); err != nil {
		return "", false, err
	}
	// Never in TMPDIR: without namespaces /tmp is writable to every
	// confined agent on the host, and one beside this job could rewrite
	// the index between add and write-tree.
	tmp, err := privateTemp(h.Root, "result-*")
	if err != nil {
		return "", false, err
	}
	defer os.RemoveAll(tmp)
	idx, objects := filepath.Join(tmp, "index"), filepath.Join(tmp, "objects")
	if err := os.Mkdir(objects, 0o700); err != nil {
		return "", false, err
	}
	// With the store's long-lived helper, the objects `add` and
	// `write-tree` make go to a directory of muster's own (the store's
	// are read as alternates): they are then exactly what the result
	// adds, packed here without a git process (bundlepack.go).
	batch := h.Batches.get(h.store(repo))
	inProcess := batch != nil && len(start) == 40
	gitIdx := func(args ...string) (string, error) {
		c := cloneGit(dir, args...)
		c.env = append(c.env, "GIT_INDEX_FILE="+idx)
		if inProcess {
			c.env = append(c.env, "GIT_OBJECT_DIRECTORY="+objects, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+filepath.Join(h.store(repo), "objects"))
		}
		return line(ctx, c)
	}
	if err := copyIndex(h.savedIndex(repo, executor, n), idx); err != nil {
		// No saved index: build one from start (slower, same result).
		os.Remove(idx)
		if _, err := gitIdx("read-tree", start); err != nil {
			return "", false, err
		}
	}
	if _, err := gitIdx("add", "-A", "--", "."); err != nil {
		return "", false, err
	}
	tree, err := gitIdx("write-tree")
	if err != nil {
		return "", false, err
	}
	base, err := h.treeOf(ctx, h.store(repo), start)
	if err != nil {
		return "", false, err
	}
	if tree == base {
		return start, false, nil
	}
	if inProcess {
		body := resultCommit(tree, start)
		commit = objectID("commit", body)
		return commit, true, writeObjectsBundle(ctx, batch, out, commit, start, tree, base, body, objects)
	}
	commit, err = commitOf(ctx, dir, tree, start, "muster fleet result")
	if err != nil {
		return "", false, err
	}
	return commit, true, WriteBundle(ctx, dir, commit, []string{start}, out)
}

// Repos lists the repository keys the host has stores for.
func (h *Host) Repos() []string {
	ents, _ := os.ReadDir(filepath.Join(h.Root, "repos"))
	var out []string
	for _, e := range ents {
		if k, ok := strings.CutSuffix(e.Name(), ".git"); ok && isObjectID(k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// privateTemp makes a fresh directory under root/tmp, muster's own (no
// agent may write root), for what muster keeps while one call runs.
func privateTemp(root, pattern string) (string, error) {
	parent := filepath.Join(root, "tmp")
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(parent, pattern)
}
