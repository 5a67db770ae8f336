package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Code moves between an orchestrator and fleet workers as git bundles.
// Every call here runs git with muster's safe settings (no hooks, no
// fsmonitor, no automatic gc) in the directory it is given, which must be
// a repository (or a worktree of one) muster manages: no agent ever ran
// in it with these calls.

// bundleRef is the one ref every fleet bundle carries.
const bundleRef = "refs/muster/fleet"

// safe are the settings of every bundle call, on top of cmd's own.
var safe = []string{"-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "-c", "transfer.fsckObjects=true"}

func safeCmd(dir string, args ...string) cmd {
	return cmd{dir: dir, args: append(append([]string(nil), safe...), args...)}
}

// WriteBundle writes to out a bundle that holds tip and every object it
// reaches that the commits in have do not (they become the bundle's
// prerequisites: the receiver has them). A have that dir does not know is
// left out, so the bundle is then larger, never wrong: the first try
// takes every have as it is (one git call), and only if git refuses one
// are they checked.
func WriteBundle(ctx context.Context, dir, tip string, have []string, out string) error {
	var prereq []string
	for _, h := range have {
		if h != "" && h != tip && isObjectID(h) && !slices.Contains(prereq, h) {
			prereq = append(prereq, h)
		}
	}
	err := writeBundle(ctx, dir, tip, prereq, out)
	var ge *GitError
	if len(prereq) == 0 || !errors.As(err, &ge) {
		return err
	}
	if prereq, err = known(ctx, dir, tip, prereq); err != nil {
		return err
	}
	return writeBundle(ctx, dir, tip, prereq, out)
}

func writeBundle(ctx context.Context, dir, tip string, prereq []string, out string) error {
	return createBundle(out, tip, prereq, func(w io.Writer) error {
		var revs strings.Builder
		revs.WriteString(tip + "\n")
		for _, p := range prereq {
			revs.WriteString("^" + p + "\n")
		}
		c := safeCmd(dir, "pack-objects", "--revs", "--stdout", "--thin", "--delta-base-offset", "-q")
		return stream(ctx, c, strings.NewReader(revs.String()), w)
	})
}

// createBundle writes to out a bundle's header (tip, with prereq as its
// prerequisites) and then what pack writes; out is removed when a step
// fails.
func createBundle(out, tip string, prereq []string, pack func(w io.Writer) error) (err error) {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(out)
		}
	}()
	var hdr strings.Builder
	hdr.WriteString("# v2 git bundle\n")
	for _, p := range prereq {
		hdr.WriteString("-" + p + "\n")
	}
	hdr.WriteString(tip + " " + bundleRef + "\n\n")
	if _, err := f.WriteString(hdr.String()); err != nil {
		return err
	}
	return pack(f)
}

// known returns the commits of have that dir holds (one git call).
func known(ctx context.Context, dir, tip string, have []string) ([]string, error) {
	var ask []string
	for _, h := range have {
		if h != "" && h != tip && isObjectID(h) {
			ask = append(ask, h)
		}
	}
	if len(ask) == 0 {
		return nil, nil
	}
	c := safeCmd(dir, "cat-file", "--batch-check=%(objectname) %(objecttype)")
	c.stdin = []byte(strings.Join(ask, "\n") + "\n")
	out, err := run(ctx, c)
	if err != nil {
		return nil, err
	}
	var got []string
	for _, l := range strings.Split(string(out), "\n") {
		if sha, typ, ok := strings.Cut(l, " "); ok && typ == "commit" {
			got = append(got, sha)
		}
	}
	return got, nil
}

// stream runs c with stdin and its standard output into w (a bundle may
// be large: it is not held in memory).
func stream(ctx context.Context, c cmd, stdin io.Reader, w io.Writer) error {
	x := exec.CommandContext(ctx, "git", c.gitArgs()...)
	x.Dir = c.dir
	x.Env = append(append([]string(nil), baseEnv()...), c.env...)
	x.Cancel = func() error { return x.Process.Signal(syscall.SIGTERM) }
	x.WaitDelay = 3 * time.Second
	x.Stdin, x.Stdout = stdin, w
	var stderr bytes.Buffer
	x.Stderr = &stderr
	err := x.Run()
	if n, ok := ctx.Value(cpuKey{}).(*atomic.Int64); ok && x.ProcessState != nil {
		n.Add(int64(x.ProcessState.UserTime() + x.ProcessState.SystemTime()))
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return &GitError{Args: c.args, ExitCode: ee.ExitCode(), Stderr: stderr.String()}
		}
		return fmt.Errorf("git %s: %w", strings.Join(c.args, " "), err)
	}
	return nil
}

// ReadBundle stores the objects of a bundle in dir's repository (its
// prerequisites must be there already) and returns the commit its ref
// names, with that commit's parents. Objects are checked as they are
// indexed.
func ReadBundle(ctx context.Context, dir, bundle string) (tip string, parents []string, err error) {
	tip, _, parents, err = readBundle(ctx, nil, dir, bundle, false)
	return tip, parents, err
}

// readBundle is ReadBundle, reading the commit through b when it is not
// nil (the long-lived helper of dir) instead of a git process. With
// fromOrchestrator (a worker's store taking its start), a pack of the
// kind chainBundle writes is stored without a git process.
func readBundle(ctx context.Context, b *Batch, dir, bundle string, fromOrchestrator bool) (tip, tree string, parents []string, err error) {
	tip, offset, err := bundleTip(bundle)
	if err != nil {
		return "", "", nil, err
	}
	stored := false
	if fromOrchestrator && b != nil && len(tip) == 40 {
		if stored, err = receiveLoose(ctx, b, dir, bundle, offset); err != nil {
			return "", "", nil, fmt.Errorf("unbundle: %w", err)
		}
	}
	if !stored {
		if err := storePack(ctx, dir, bundle, offset); err != nil {
			return "", "", nil, fmt.Errorf("unbundle: %w", err)
		}
	}
	tree, parents, err = commitInfo(ctx, b, dir, tip)
	if err != nil {
		return "", "", nil, fmt.Errorf("bundle: its commit %s is missing after unbundle", tip)
	}
	return tip, tree, parents, nil
}

// commitInfo reads a commit's tree and parents: through b (the
// long-lived helper of dir) when it is not nil, else with one git call.
func commitInfo(ctx context.Context, b *Batch, dir, commit string) (tree string, parents []string, err error) {
	var out []byte
	if b != nil {
		var info ObjectInfo
		info, out, err = b.Contents(ctx, commit)
		if err == nil && info.Type != "commit" {
			err = fmt.Errorf("%s is a %s, not a commit", commit, info.Type)
		}
	} else {
		out, err = run(ctx, safeCmd(dir, "cat-file", "commit", commit))
	}
	if err != nil {
		return "", nil, err
	}
	hdr, _, _ := strings.Cut(string(out), "\n\n")
	for _, l := range strings.Split(hdr, "\n") {
		switch k, v, _ := strings.Cut(l, " "); k {
		case "tree":
			tree = v
		case "parent":
			parents = append(parents, v)
		}
	}
	if tree == "" {
		return "", nil, fmt.Errorf("commit %s has no tree", commit)
	}
	return tree, parents, nil
}

// bundleTip reads the one ref of a fleet bundle's header, and where the
// pack after the header starts.
func bundleTip(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	r := bufio.NewReader(io.LimitReader(f, 1<<20))
	first, err := r.ReadString('\n')
	if err != nil || first != "# v2 git bundle\n" {
		return "", 0, fmt.Errorf("bundle %s: not a v2 git bundle", filepath.Base(path))
	}
	tip, offset := "", int64(len(first))
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return "", 0, fmt.Errorf("bundle %s: truncated header", filepath.Base(path))
		}
		offset += int64(len(l))
		l = strings.TrimSuffix(l, "\n")
		if l == "" {
			break
		}
		if strings.HasPrefix(l, "-") {
			continue
		}
		sha, ref, ok := strings.Cut(l, " ")
		if !ok || ref != bundleRef || !isObjectID(sha) || tip != "" {
			return "", 0, fmt.Errorf("bundle %s: want exactly one ref %s", filepath.Base(path), bundleRef)
		}
		tip = sha
	}
	if tip == "" {
		return "", 0, fmt.Errorf("bundle %s: no ref", filepath.Base(path))
	}
	return tip, offset, nil
}

// Snapshot records the whole state of the work tree dir (tracked,
// untracked, deletions; not ignored files) as a commit whose parent is
// parent, through a throw-away index: no ref, no HEAD and not the
// worktree's own index change.
func Snapshot(ctx context.Context, dir, parent string) (string, error) {
	// The throw-away index lies in muster's cache, never in TMPDIR:
	// without namespaces /tmp is writable to every confined agent.
	cache, err := CacheRoot()
	if err != nil {
		return "", err
	}
	tmpDir, err := privateTemp(cache, "snap-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmpDir)
	idx := filepath.Join(tmpDir, "index")
	env := []string{"GIT_INDEX_FILE=" + idx}
	// The worktree's own index, when it has one, is a stat cache that
	// spares hashing every file; add -A makes the copy describe the work
	// tree exactly either way.
	fresh := func() error {
		os.Remove(idx)
		c := safeCmd(dir, "read-tree", parent)
		c.env = env
		_, err := run(ctx, c)
		return err
	}
	seeded := copyIndex(filepath.Join(dir, ".git", "index"), idx) == nil
	if !seeded {
		if err := fresh(); err != nil {
			return "", err
		}
	}
	c := safeCmd(dir, "add", "-A", "--", ".")
	c.env = env
	if _, err := run(ctx, c); err != nil {
		// A copied index git cannot read alone (a split index, say):
		// start from parent instead.
		if !seeded {
			return "", err
		}
		if err := fresh(); err != nil {
			return "", err
		}
		if _, err := run(ctx, c); err != nil {
			return "", err
		}
	}
	c = safeCmd(dir, "write-tree")
	c.env = env
	tree, err := line(ctx, c)
	if err != nil {
		return "", err
	}
	return commitOf(ctx, dir, tree, parent, "muster fleet snapshot")
}

// commitOf makes an unsigned commit of tree on parent with muster's
// fixed identity (snapshots and results are never what lands: the
// orchestrator commits the change itself).
func commitOf(ctx context.Context, dir, tree, parent, msg string) (string, error) {
	c := safeCmd(dir, "commit-tree", "--no-gpg-sign", "-p", parent, "-F", "-", tree)
	c.stdin = []byte(msg + "\n")
	c.env = []string{"GIT_AUTHOR_NAME=muster", "GIT_AUTHOR_EMAIL=muster@localhost", "GIT_COMMITTER_NAME=muster",
		"GIT_COMMITTER_EMAIL=muster@localhost", "GIT_AUTHOR_DATE=@0 +0000", "GIT_COMMITTER_DATE=@0 +0000"}
	return line(ctx, c)
}

// ChangedPaths lists the paths that differ between two commits' trees
// (renames as a deletion and an addition).
func ChangedPaths(ctx context.Context, dir, from, to string) (changed, deleted []string, err error) {
	out, err := run(ctx, safeCmd(dir, "diff-tree", "-r", "-z", "--no-renames", "--name-status", from, to))
	if err != nil {
		return nil, nil, err
	}
	f := splitZ(out)
	for i := 0; i+1 < len(f); i += 2 {
		if f[i] == "D" {
			deleted = append(deleted, f[i+1])
		} else {
			changed = append(changed, f[i+1])
		}
	}
	return changed, deleted, nil
}

// Apply changes the work tree dir, which holds from, to hold to: it
// writes the files that differ and removes those to deletes, as an agent
// would have written them (the worktree's own index follows).
func Apply(ctx context.Context, dir, from, to string) error {
	changed, deleted, err := ChangedPaths(ctx, dir, from, to)
	if err != nil {
		return err
	}
	return applyPaths(ctx, dir, to, changed, deleted)
}

// applyPaths removes deleted from the work tree dir and writes changed
// as they are in commit to.
func applyPaths(ctx context.Context, dir, to string, changed, deleted []string) error {
	if len(deleted) > 0 {
		c := safeCmd(dir, "rm", "-r", "-q", "-f", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul")
		c.stdin, c.paths = []byte(strings.Join(deleted, "\x00")), true
		if _, err := run(ctx, c); err != nil {
			return err
		}
	}
	if len(changed) > 0 {
		c := safeCmd(dir, "checkout", to, "--pathspec-from-file=-", "--pathspec-file-nul")
		c.stdin, c.paths = []byte(strings.Join(changed, "\x00")), true
		if _, err := run(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// RootCommit returns the first root commit reachable from commit: it
// names a repository across machines (a fleet worker keeps one object
// store per root).
func RootCommit(ctx context.Context, dir, commit string) (string, error) {
	out, err := line(ctx, safeCmd(dir, "rev-list", "--max-parents=0", commit))
	if err != nil {
		return "", err
	}
	f := strings.Fields(out)
	if len(f) == 0 {
		return "", fmt.Errorf("no root commit below %s", commit)
	}
	return f[len(f)-1], nil
}

// Head returns the commit HEAD of dir names.
func Head(ctx context.Context, dir string) (string, error) {
	return line(ctx, safeCmd(dir, "rev-parse", "--verify", "HEAD^{commit}"))
}

// Bundles is the orchestrator's side of a fleet's code transport over
// this package (the fleet's Local port): bundles out and in, snapshots
// of a worktree, and applying a returned commit to one. With Batches, a
// returned bundle's commit is read through the long-lived helper of its
// clone instead of a git process (Close them when the run ends).
type Bundles struct {
	Batches *Batches
}

// Close stops the long-lived helpers of Batches.
func (b Bundles) Close() error {
	b.Batches.Close()
	return nil
}

// Head returns the commit HEAD of dir names.
func (Bundles) Head(ctx context.Context, dir string) (string, error) { return Head(ctx, dir) }

// Snapshot records dir's work tree as a commit on parent.
func (Bundles) Snapshot(ctx context.Context, dir, parent string) (string, error) {
	return Snapshot(ctx, dir, parent)
}

// WriteBundle writes a bundle of tip less what have reaches: with
// Batches, in process when tip is a short chain of commits on a have
// (chainBundle), else with pack-objects.
func (b Bundles) WriteBundle(ctx context.Context, dir, tip string, have []string, out string) error {
	if bt := b.Batches.get(dir); bt != nil {
		if ok, err := chainBundle(ctx, bt, tip, have, out); ok && err == nil {
			return nil
		}
	}
	return WriteBundle(ctx, dir, tip, have, out)
}

// ReadBundle stores a bundle's objects and returns its commit and parents.
func (b Bundles) ReadBundle(ctx context.Context, dir, bundle string) (string, []string, error) {
	tip, _, parents, err := readBundle(ctx, b.Batches.get(dir), dir, bundle, false)
	return tip, parents, err
}

// Apply writes the change from one commit to another into dir; with
// Batches, the change is read through dir's long-lived helper.
func (b Bundles) Apply(ctx context.Context, dir, from, to string) error {
	if bt := b.Batches.get(dir); bt != nil {
		changed, deleted, err := treeDiff(ctx, bt, from, to)
		if err != nil {
			return err
		}
		return applyPaths(ctx, dir, to, changed, deleted)
	}
	return Apply(ctx, dir, from, to)
}
