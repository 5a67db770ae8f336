package git

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Moving the run branch in process. Every integration moves the run
// branch by compare-and-swap: `git update-ref --no-deref -m MSG ref new
// old`, one git process a task. In a repository whose refs are files
// (git's default) that is: take the ref's lock file (ref.lock, created
// exclusively), check that the ref holds old, write new into the lock,
// append the move to the ref's reflog and rename the lock over the ref.
// moveRef does exactly that, with git's lock file, so git and muster
// exclude each other as two gits do. It is taken only where git would
// do nothing more: refs in files (no reftable), the ref a plain loose
// file at old, its reflog there already (git then only appends), the
// user's HEAD in the main work tree and not on the run branch (git
// would log the move in HEAD's reflog too), no fsync asked of refs
// (core.fsync), a shared repository's permissions not needed, and the
// identity git would log known (user.name and user.email set, no
// committer.* config, no GIT_COMMITTER_* in the environment). Otherwise
// update-ref runs, as before.

// refMoveMsg is the reflog message of an integration's move.
const refMoveMsg = "muster: task"

// moveRef moves the run branch from old to next in process, as
// update-ref would; false (and no error) when it is not the plain case,
// having changed nothing: the caller runs update-ref, which also says
// what is wrong when the ref is not at old. An error after the lock was
// taken is the move's failure.
func (w *Workspace) moveRef(old, next string) (bool, error) {
	ident, ok := w.reflogIdent()
	if !ok || !isObjectID(old) || !isObjectID(next) {
		return false, nil
	}
	if !w.headElsewhere() {
		return false, nil // git logs the move in HEAD's reflog too
	}
	ref := filepath.Join(w.common, filepath.FromSlash(w.ref))
	logPath := filepath.Join(w.common, "logs", filepath.FromSlash(w.ref))
	if fi, err := os.Lstat(logPath); err != nil || !fi.Mode().IsRegular() {
		return false, nil // git decides whether to start a reflog
	}
	lock, err := os.OpenFile(ref+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return false, nil // held by another process: git waits or says so
	}
	locked := true
	defer func() {
		if locked {
			lock.Close()
			os.Remove(ref + ".lock")
		}
	}()
	if !holds(ref, old) {
		return false, nil
	}
	if _, err := lock.WriteString(next + "\n"); err != nil {
		return true, fmt.Errorf("move %s: %w", w.ref, err)
	}
	if err := lock.Close(); err != nil {
		return true, fmt.Errorf("move %s: %w", w.ref, err)
	}
	now := time.Now()
	entry := fmt.Sprintf("%s %s %s %d %s\t%s\n", old, next, ident, now.Unix(), now.Format("-0700"), refMoveMsg)
	if err := appendLog(logPath, entry); err != nil {
		return true, fmt.Errorf("move %s: reflog: %w", w.ref, err)
	}
	if err := os.Rename(ref+".lock", ref); err != nil {
		return true, fmt.Errorf("move %s: %w", w.ref, err)
	}
	locked = false
	w.refMoves.Add(1)
	return true, nil
}

// headElsewhere reports whether the user's work tree is the
// repository's main one (its .git the common directory) and its HEAD,
// a regular file, is not on the run branch.
func (w *Workspace) headElsewhere() bool {
	if filepath.Join(w.top, ".git") != w.common {
		return false
	}
	head := filepath.Join(w.common, "HEAD")
	if fi, err := os.Lstat(head); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	b, err := os.ReadFile(head)
	return err == nil && strings.TrimSpace(strings.TrimPrefix(string(b), "ref:")) != w.ref
}

// holds reports whether the loose ref file at p is a regular file
// holding exactly id.
func holds(p, id string) bool {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	var buf [128]byte
	n, _ := f.Read(buf[:])
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular() && string(buf[:n]) == id+"\n"
}

// appendLog appends entry to the existing reflog at p, following no
// link.
func appendLog(p, entry string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return errors.Join(errors.New("not a regular file"), err)
	}
	_, err = f.WriteString(entry)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// reflogIdent returns the identity git logs a move of a ref with
// ("Name <email>"), when muster knows it as git would, and the
// repository's settings leave the move to a plain file write.
func (w *Workspace) reflogIdent() (string, bool) {
	if w.fallback || w.shared() || len(w.refConfig) > 0 && !onlyFileRefs(w.refConfig) {
		return "", false
	}
	for _, kv := range baseEnv() {
		if strings.HasPrefix(kv, "GIT_COMMITTER_") {
			return "", false
		}
	}
	name := strings.TrimPrefix(w.ident[2], "GIT_COMMITTER_NAME=")
	email := strings.TrimPrefix(w.ident[3], "GIT_COMMITTER_EMAIL=")
	if !plainIdent(name) || !plainIdent(email) || !gitUTF8(name+email) {
		return "", false
	}
	return name + " <" + email + ">", true
}

// onlyFileRefs reports whether the settings read (refConfig) are just
// extensions.refStorage naming the files backend.
func onlyFileRefs(cfg []string) bool {
	for _, kv := range cfg {
		k, v, _ := strings.Cut(kv, "=")
		if k != "extensions.refstorage" || !strings.EqualFold(v, "files") {
			return false
		}
	}
	return true
}
