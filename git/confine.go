package git

import "path/filepath"

// CloneWritable returns what an agent's own git commands in the worktree
// at dir write outside it: the worktree's git directory and the object
// store, both in the user's repository. Confined agents may write them,
// so that an agent can still commit on its own.
func (w *Workspace) CloneWritable(dir string) []string {
	w.mu.Lock()
	s := w.byDir[dir]
	w.mu.Unlock()
	if s == nil || s.gitDir == "" {
		return nil
	}
	return []string{s.gitDir, filepath.Join(w.common, "objects")}
}
