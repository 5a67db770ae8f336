package confine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
)

// LauncherName is the program installed beside muster (cmd/muster-confine)
// that starts its sandboxes: it takes muster.ConfineCommand exactly as
// muster's own executable does, but it is a small program of its own, so
// each agent, gate and setup step starts several milliseconds of CPU
// sooner than through a re-exec of muster (whose start initialises a
// whole command tree, and whose exit unmaps it). Without it muster
// confines with its own executable, as before.
const LauncherName = "muster-confine"

// Protocol numbers the ConfineCommand's arguments (muster.ConfineProtocol):
// a launcher of another one is not chosen (Launcher), and refuses a
// --protocol other than its own.
const Protocol = muster.ConfineProtocol

// versionFlag asks a launcher for its Identity (muster __confine
// --version).
const versionFlag = "--version"

// Identity is what a launcher prints for `__confine --version`: the
// protocol and, when Go recorded one, the build (the module's version,
// or the commit it was built from).
func Identity() string {
	id := "protocol " + strconv.Itoa(Protocol)
	if b := build(); b != "" {
		id += " build " + b
	}
	return id
}

func build() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "true" {
		rev += "+modified"
	}
	return rev
}

// compatible tells whether a launcher that printed theirs may start
// the sandboxes of a muster whose Identity is ours: the same protocol
// and, where both recorded one, the same build.
func compatible(ours, theirs string) bool {
	op, ob, _ := strings.Cut(ours, " build ")
	tp, tb, _ := strings.Cut(theirs, " build ")
	return op == tp && (ob == "" || tb == "" || ob == tb)
}

// Launcher returns the program that starts the sandboxes of the muster
// at exe: LauncherName beside it when one is installed there and answers
// with a compatible Identity, exe itself otherwise. warning is set when
// a launcher is there but cannot serve (another version, or it does not
// run): muster then confines with its own executable, more slowly, and
// says how to mend it. The answer is the same for the rest of the
// process.
func Launcher(exe string) (path, warning string) {
	if r, ok := launchers.Load(exe); ok {
		c := r.([2]string)
		return c[0], c[1]
	}
	path, warning = launcher(exe)
	launchers.Store(exe, [2]string{path, warning})
	return path, warning
}

// launchers remembers Launcher's answer for each muster executable: it
// is asked once per process.
var launchers sync.Map

func launcher(exe string) (path, warning string) {
	sibling := filepath.Join(filepath.Dir(exe), LauncherName)
	if _, err := os.Stat(sibling); err != nil {
		return exe, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, sibling, muster.ConfineCommand, versionFlag)
	cmd.Dir = "/"
	// A line is all it says: what is beyond is not kept, and a child of
	// it that holds the output does not keep muster waiting.
	var out capped
	cmd.Stdout = &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if errors.Is(err, osexec.ErrWaitDelay) && cmd.ProcessState.Success() {
		err = nil // it answered and exited; what it left is not muster's
	}
	theirs := strings.TrimSpace(out.b.String())
	switch {
	case err != nil:
		return exe, fmt.Sprintf("%s does not run (%v): muster starts its sandboxes itself, more slowly; reinstall both from the same release", sibling, err)
	case !compatible(Identity(), theirs):
		return exe, fmt.Sprintf("%s is from another build of muster (%q, this muster: %q): muster starts its sandboxes itself, more slowly; reinstall both from the same release", sibling, firstLine(theirs), Identity())
	}
	return sibling, ""
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// capped keeps the first 4 KiB written to it and takes the rest unread.
type capped struct{ b bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := 4096 - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
