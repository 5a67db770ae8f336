package git

import (
	"io/fs"
	"os"
	"path/filepath"
)

// dropSpecialFiles removes the FIFOs, sockets and devices an agent left
// in the clone of s. Git never records one, but it opens a .gitignore,
// .gitattributes or .gitmodules by name, and opening a FIFO blocks until
// a writer comes, which is never (the agent is gone): staging, and the
// run, hung. It looks at the paths the watcher saw when its record is
// complete, else at the whole clone (its own .git aside). Removal goes
// through an os.Root: a path through a link the agent made never
// reaches outside the clone.
func dropSpecialFiles(s *slot) {
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return
	}
	defer root.Close()
	drop := func(rel string) {
		if fi, err := root.Lstat(rel); err == nil && special(fi.Mode()) {
			_ = root.Remove(rel) // best effort
		}
	}
	if s.wt != nil && s.touched != nil && s.wt.drain(s.touched) {
		for p := range s.touched {
			drop(filepath.FromSlash(p))
		}
		return
	}
	dropSpecialAll(root, s.dir)
}

// dropSpecialAll removes every FIFO, socket and device in the clone at
// dir (root), its own .git aside. A full reset calls it too: git clean
// leaves such files, so one left by an earlier process (killed while it
// hung) stayed in the clone for every later run.
func dropSpecialAll(root *os.Root, dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: git says so itself
		}
		rel, rerr := filepath.Rel(dir, p)
		switch {
		case rerr != nil:
			return nil
		case d.IsDir() && rel == ".git":
			return filepath.SkipDir
		case special(d.Type()):
			if fi, err := root.Lstat(rel); err == nil && special(fi.Mode()) {
				_ = root.Remove(rel) // best effort
			}
		}
		return nil
	})
}

// special reports a file type git does not record and may block on: not
// a regular file, a directory or a symlink.
func special(m fs.FileMode) bool {
	return m&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice|fs.ModeIrregular) != 0
}
