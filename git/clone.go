package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A clone is its own repository: a work tree with a real git directory
// inside (dir/.git) whose objects/info/alternates points at the user's
// object store, read-only. Its refs, config, hooks, index and gc act on
// it alone. muster never runs git with that git directory: its own calls
// in a clone name muster's private git directory beside it (GIT_DIR,
// GIT_WORK_TREE, GIT_INDEX_FILE explicit) and write the objects of a
// change straight into the user's object store (GIT_OBJECT_DIRECTORY),
// never reading the clone's own objects, so nothing an agent planted
// there can stand in for what muster hashed. Integration (commit-tree,
// merge-tree, diff-tree) runs in muster's integration git directory in
// the cache, over the same object store; only update-ref of the run
// branch runs in the user's repository. The same shape serves a remote
// clone: muster hands it a base and takes a result (a tree of objects)
// back.

// carried are the user's config keys that muster's own calls keep: they
// decide what a file's content and mode mean (so that a change is the
// same as in the user's repository), never a program to run.
var carried = []string{
	"core.filemode", "core.symlinks", "core.ignorecase", "core.precomposeunicode",
	"core.autocrlf", "core.eol", "core.safecrlf", "core.sharedrepository",
	"core.bigfilethreshold", "core.excludesfile", "core.checkstat", "core.trustctime",
	"extensions.objectformat",
	// Read, not carried: whether muster may move its run branch itself
	// (refmove.go).
	"extensions.refstorage", "committer.name", "committer.email", "core.fsync", "core.fsyncmethod",
}

// openCache opens the repository's pool, reads the settings carried into
// muster's own calls, and makes muster's integration git directory.
func (w *Workspace) openCache(ctx context.Context, opts Options) error {
	root := opts.CacheDir
	if root == "" {
		var err error
		if root, err = CacheRoot(); err != nil {
			return err
		}
	}
	p, err := openPool(root, w.common, opts.MaxClones)
	if err != nil {
		return err
	}
	w.pool = p
	if err := w.readCarried(ctx); err != nil {
		return err
	}
	if b, err := os.ReadFile(filepath.Join(w.common, "info", "exclude")); err == nil {
		w.excludes = b
	}
	// What survives the clean between tasks (Keep: [setup] outputs such
	// as node_modules/, [run] keep) is no task's change, .gitignore or not.
	if len(w.keep) > 0 {
		w.excludes = append(append(w.excludes, "\n# muster: kept between tasks\n"...), strings.Join(w.keep, "\n")+"\n"...)
	}
	w.integDir = filepath.Join(p.dir, "git")
	w.batch = newBatch(w.ig())
	return w.ownGitDir(w.integDir, nil)
}

// readCarried reads the carried keys from the user's config.
func (w *Workspace) readCarried(ctx context.Context) error {
	pat := `^(` + strings.ReplaceAll(strings.Join(carried, "|"), ".", `\.`) + `)$`
	out, err := run(ctx, cmd{dir: w.top, readOnly: true, args: []string{"config", "-z", "--get-regexp", pat}})
	if err != nil && exitCode(err) != 1 {
		return fmt.Errorf("read git config: %w", err)
	}
	w.format = "sha1"
	home, _ := os.UserHomeDir()
	for _, kv := range splitZ(out) {
		k, v, _ := strings.Cut(kv, "\n")
		switch k {
		case "extensions.objectformat":
			w.format = strings.ToLower(v)
			continue
		case "extensions.refstorage", "committer.name", "committer.email", "core.fsync", "core.fsyncmethod":
			w.refConfig = append(w.refConfig, k+"="+v)
			continue
		case "core.excludesfile":
			if rest, ok := strings.CutPrefix(v, "~/"); ok && home != "" {
				v = filepath.Join(home, rest)
			}
		}
		if strings.ContainsAny(v, "\x00\n") {
			continue
		}
		w.carry = append(w.carry, "-c", k+"="+v)
	}
	return nil
}

// formatConfig is the part of a config that names the object format.
func (w *Workspace) formatConfig() (version int, ext string) {
	if w.format != "" && w.format != "sha1" {
		return 1, "[extensions]\n\tobjectformat = " + w.format + "\n"
	}
	return 0, ""
}

// cloneConfig is the config of a clone's own git directory, written
// afresh at every Prepare: what `git init` writes, with the user's
// carried core settings, and nothing an earlier agent added.
func (w *Workspace) cloneConfig() []byte {
	v, ext := w.formatConfig()
	var b bytes.Buffer
	fmt.Fprintf(&b, "[core]\n\trepositoryformatversion = %d\n\tbare = false\n\tlogallrefupdates = true\n", v)
	for i := 1; i < len(w.carry); i += 2 {
		k, val, _ := strings.Cut(w.carry[i], "=")
		if name, ok := strings.CutPrefix(k, "core."); ok && name != "excludesfile" && name != "sharedrepository" {
			fmt.Fprintf(&b, "\t%s = %s\n", name, quoteConfig(val))
		}
	}
	b.WriteString(ext)
	// An agent that commits on its own needs an identity, also with a
	// home of its own: the one muster commits as.
	name, email := strings.TrimPrefix(w.ident[0], "GIT_AUTHOR_NAME="), strings.TrimPrefix(w.ident[1], "GIT_AUTHOR_EMAIL=")
	fmt.Fprintf(&b, "[user]\n\tname = %s\n\temail = %s\n", quoteConfig(name), quoteConfig(email))
	return b.Bytes()
}

// quoteConfig quotes a config value.
func quoteConfig(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// ownGitDir makes (or repairs) one of muster's own git directories:
// HEAD on an unborn branch, no objects of its own (calls name the user's
// store), muster's config and nothing else that git reads: no hooks, no
// info/attributes. excludes, if not nil, becomes info/exclude.
func (w *Workspace) ownGitDir(dir string, excludes []byte) error {
	for _, d := range []string{filepath.Join(dir, "objects"), filepath.Join(dir, "refs"), filepath.Join(dir, "info")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	v, ext := w.formatConfig()
	files := map[string][]byte{
		"HEAD":   []byte("ref: refs/heads/none\n"),
		"config": []byte(fmt.Sprintf("[core]\n\trepositoryformatversion = %d\n\tbare = true\n%s", v, ext)),
	}
	if excludes != nil {
		files[filepath.Join("info", "exclude")] = excludes
	}
	for name, want := range files {
		p := filepath.Join(dir, name)
		if have, err := os.ReadFile(p); err == nil && bytes.Equal(have, want) {
			continue
		}
		if err := writeFileAtomic(p, want); err != nil {
			return err
		}
	}
	for _, name := range []string{"hooks", filepath.Join("info", "attributes"), "commondir", "gitdir", "objects/info/alternates", "shallow"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// ig returns a call in muster's integration git directory.
func (w *Workspace) ig(args ...string) cmd {
	return cmd{dir: w.integDir, own: true, pre: w.carry,
		env:  []string{"GIT_DIR=" + w.integDir, "GIT_OBJECT_DIRECTORY=" + w.objects},
		args: args}
}

// agentGit makes the clone's own git directory afresh: HEAD detached at
// tip, no refs, muster's config, no hooks, info/exclude from the user's
// repository, alternates to the user's object store, an empty object
// store of its own, and a copy of muster's private index as its index
// (its split parts copied too, never hard-linked: a write to a link
// would be a write to muster's own index).
func (w *Workspace) agentGit(s *slot, tip string) error {
	// Every step goes through a root opened on the clone: a process the
	// agent left behind (the Landlock-only fallback has no namespace to
	// end it) may swap .git, or a directory in it, for a link while this
	// runs, and muster must never write where such a link points.
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if w.reuseAgentGit(root, s, tip) {
		w.reusedAgentGits.Add(1)
		return nil
	}
	if err := w.makeAgentGit(root, s, tip); err != nil {
		return err
	}
	recordAgentGit(root, s) // reused by the next reset if untouched (agentgit.go)
	return nil
}

// makeAgentGit makes the clone's .git afresh through root.
func (w *Workspace) makeAgentGit(root *os.Root, s *slot, tip string) error {
	if err := rootRemoveAll(root, ".git"); err != nil {
		return err
	}
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags", "info"} {
		if err := root.MkdirAll(filepath.Join(".git", filepath.FromSlash(d)), 0o755); err != nil {
			return err
		}
	}
	for name, data := range map[string][]byte{
		"HEAD":                    []byte(tip + "\n"),
		"config":                  w.agentCfg,
		"objects/info/alternates": []byte(w.objects + "\n"),
		"info/exclude":            w.excludes,
	} {
		if err := root.WriteFile(filepath.Join(".git", filepath.FromSlash(name)), data, 0o644); err != nil {
			return err
		}
	}
	idx := filepath.Join(s.gitDir, indexName)
	if err := copyIndexInto(root, idx, ".git/index"); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	// A copy, never a hard link: the agent writes its own git directory,
	// and a write through a link would be a write to muster's index.
	shared, _ := filepath.Glob(filepath.Join(s.gitDir, "sharedindex.*"))
	for _, f := range shared {
		if err := copyIndexInto(root, f, ".git/"+filepath.Base(f)); err != nil {
			return err
		}
	}
	return nil
}

// rootRemoveAll removes name inside root (a link itself, never what it
// points to), making read-only directories an agent left writable first.
func rootRemoveAll(root *os.Root, name string) error {
	if err := root.RemoveAll(name); err == nil {
		return nil
	}
	_ = fs.WalkDir(root.FS(), name, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = root.Chmod(p, 0o700)
		}
		return nil
	})
	return root.RemoveAll(name)
}

// copyIndexInto copies muster's index file src to dst inside root, by a
// temporary file renamed over it, keeping src's modification time (git
// compares it with the files' to trust its stat data).
func copyIndexInto(root *os.Root, src, dst string) error {
	// No link followed, no FIFO waited on: src may lie in a clone's .git.
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", src)
	}
	// A new file, never one found under the temporary name: the agent
	// may have left a link there (to a file of the worktree) or a hard
	// link, and a write through it would land in that file.
	tmp := dst + ".tmp"
	if err := root.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	out, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Chtimes(tmp, fi.ModTime(), fi.ModTime())
	}
	if err != nil {
		_ = root.Remove(tmp)
		return err
	}
	return root.Rename(tmp, dst)
}
