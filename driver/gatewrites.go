package driver

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/muster-run/muster"
)

// contentOf is what a path of the change holds in the worktree, for
// telling whether a gate rewrote it: a digest of a regular file's bytes
// (streamed), a link's target, another file type, or "" when absent.
func contentOf(dir, rel string) string {
	p := filepath.Join(dir, rel)
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return ""
	case fi.Mode()&os.ModeSymlink != 0:
		t, _ := os.Readlink(p)
		return "link:" + t
	case !fi.Mode().IsRegular():
		return "type:" + fi.Mode().Type().String()
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "unreadable:" + err.Error()
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unreadable:" + err.Error()
	}
	return fmt.Sprintf("%s:%x", fi.Mode().Perm(), h.Sum(nil))
}

// changeContents is contentOf for every path of change.
func changeContents(dir string, change *muster.Change) map[string]string {
	if change == nil {
		return nil
	}
	out := make(map[string]string, len(change.Files))
	for _, p := range change.Paths() {
		out[p] = contentOf(dir, p)
	}
	return out
}

// rewritten lists, sorted, the paths of the change whose content differs
// from before (what a gate changed in what the agent staged), and
// updates before to what they hold now.
func rewritten(dir string, before map[string]string) []string {
	var out []string
	for p, was := range before {
		if now := contentOf(dir, p); now != was {
			out = append(out, p)
			before[p] = now
		}
	}
	sort.Strings(out)
	return out
}

// gateChangedReason is the round's failure when gate g rewrote paths of
// the change: the gate passed on content the agent did not write, so the
// round does not commit it (a formatter gate must check, not fix).
func gateChangedReason(g muster.GateSpec, paths []string) string {
	return fmt.Sprintf("gate %s changed %s", g.Name, strings.Join(paths, ", "))
}

// gateChangedFeedback tells the coder what the gate rewrote.
func gateChangedFeedback(g muster.GateSpec, paths []string) string {
	return fmt.Sprintf("Gate %q (%s) changed files of your change: %s. A gate checks the change, it does not make it: "+
		"the worktree now holds what the gate wrote; keep it or fix it yourself, so that the gate changes nothing.",
		g.Name, g.Command, strings.Join(paths, ", "))
}
