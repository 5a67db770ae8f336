package git

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Hard links (issue 21, item 9). A write through another name of a
// clone's file (a hard link the agent made outside the clone, in /tmp)
// reaches the file with no event on its own path, and its stat data may
// be put back (size, mtime; ctime too, for git, where the user's config
// says core.trustctime = false). So a file muster has seen with more than
// one name is never trusted by its stat data: every staging re-hashes it
// (rehashLinked), and the next reset unlinks the clone's name of it
// (unlinkLinked), so the reset writes a fresh file that the other name no
// longer reaches. muster learns of a link when the watcher reports a
// touched path that has more than one name (a link made inside the
// clone); then one walk of the clone finds every file of more than one
// name. A link made from outside the clone to a file in it (in /tmp)
// raises no event on the clone's side: the kernel reports a link count's
// change to watches on the file, not its directory. That one the mount
// namespace stops (a private /tmp is another file system: no hard link
// crosses it); docs/security.md says what remains.

// findLinked walks the clone (not its .git) and records in s.linked
// every regular file of more than one name.
func (s *slot) findLinked() {
	if s.linked == nil {
		s.linked = map[string]bool{}
	}
	_ = filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != s.dir {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil || !hardLinked(fi) {
			return nil
		}
		if rel, err := filepath.Rel(s.dir, p); err == nil {
			s.linked[filepath.ToSlash(rel)] = true
		}
		return nil
	})
}

// rehashLinked re-hashes the tracked files of s.linked into the private
// index, whatever their stat data says.
func (w *Workspace) rehashLinked(ctx context.Context, s *slot, g wtGit) error {
	if len(s.linked) == 0 {
		return nil
	}
	var paths []string
	for p := range s.linked {
		fi, err := os.Lstat(filepath.Join(s.dir, filepath.FromSlash(p)))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > w.maxFile {
			continue // gone, replaced, or oversize (never read: Violations names it)
		}
		paths = append(paths, p)
	}
	if len(paths) == 0 {
		return nil
	}
	c := g.c("ls-files", "-s", "-z", "--")
	c.readOnly = true
	c.args = append(c.args, literal(paths)...)
	out, err := run(ctx, c)
	if err != nil {
		return fmt.Errorf("hard-linked files: %w", err)
	}
	modes := map[string]string{}
	var tracked []string
	for _, rec := range splitZ(out) {
		meta, p, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || f[2] != "0" || (f[0] != "100644" && f[0] != "100755") {
			continue
		}
		modes[p] = f[0]
		tracked = append(tracked, p)
	}
	if len(tracked) == 0 {
		return nil
	}
	h := g.c("hash-object", "-w", "--stdin-paths")
	h.stdin = []byte(strings.Join(tracked, "\n") + "\n")
	out, err = run(ctx, h)
	if err != nil {
		return fmt.Errorf("re-hash hard-linked files: %w", err)
	}
	shas := strings.Fields(string(out))
	if len(shas) != len(tracked) {
		return fmt.Errorf("re-hash hard-linked files: %d hashes for %d files", len(shas), len(tracked))
	}
	var info strings.Builder
	for i, p := range tracked {
		fmt.Fprintf(&info, "%s %s\t%s\x00", modes[p], shas[i], p)
	}
	u := g.c("update-index", "-z", "--index-info")
	u.stdin = []byte(info.String())
	if _, err := run(ctx, u); err != nil {
		return fmt.Errorf("re-hash hard-linked files: %w", err)
	}
	return nil
}

// unlinkLinked removes the clone's name of every file of s.linked that
// still has another name, and marks it touched, so the reset that
// follows writes a fresh file of one name. s.linked is cleared.
// Both go through a root opened on the clone: a process the agent left
// behind (without namespaces nothing ends it) may swap a directory on
// the way for a link between the check and the removal.
func (s *slot) unlinkLinked() {
	if len(s.linked) > 0 {
		if root, err := os.OpenRoot(s.dir); err == nil {
			for p := range s.linked {
				rel := filepath.FromSlash(p)
				if fi, err := root.Lstat(rel); err == nil && fi.Mode().IsRegular() && hardLinked(fi) {
					if root.Remove(rel) == nil && s.touched != nil {
						s.touched[p] = true
					}
				}
			}
			root.Close()
		}
	}
	s.linked = nil
}

// literal turns paths into literal pathspecs.
func literal(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = ":(literal)" + p
	}
	return out
}
