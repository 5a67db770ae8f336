package confine

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/muster-run/muster/internal/proc"
)

// runAlone is the ConfineCommand without namespaces (where user
// namespaces are refused: Ubuntu's AppArmor default, a container). This
// process stays as the program's parent and the subreaper of everything
// the program starts: a daemon that leaves the session (setsid) and
// empties its environment (env -i, no family mark for muster to find)
// still becomes this process's child when its parent exits, and ends
// with the invocation. The program starts from a confined thread
// (startConfined: no capability, no_new_privs, Landlock, reading only
// readable when the hide list asks), in this process's group, which
// muster signals. Once the program has exited, what it left gets
// SIGTERM, then SIGKILL after half the grace; when muster stops the
// invocation (SIGTERM, SIGINT), the program gets half the grace to end
// before everything does: half, so that all is over before muster's own
// SIGKILL (a grace after its SIGTERM) would end this process and orphan
// the rest to muster. When muster dies (--life), everything ends at once.
// It returns the program's exit status (128+N when a signal N ended it).
// A kernel without subreapers (before Linux 3.4) gets the old way: the
// program replaces this process.
func runAlone(o Options, path string) (int, error) {
	readable := landlockReadable(o, path)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return exec(path, o.Argv, o.Write, readable)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	gone := watchLife(o.Life)
	pid, code, err := startConfined(path, o.Argv, o.Write, readable, false)
	if err != nil {
		return code, err
	}
	progDone := make(chan int, 1)
	allGone := make(chan struct{})
	go reap(pid, progDone, allGone)
	grace := o.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	grace /= 2
	var deadline <-chan time.Time
	for code = -1; code < 0; {
		select {
		case <-sigs:
			// The program got muster's signal with this process's group.
			if deadline == nil {
				t := time.NewTimer(grace)
				defer t.Stop()
				deadline = t.C
			}
		case <-deadline:
			signalTree(syscall.SIGKILL)
			deadline = nil
		case code = <-progDone:
		case <-gone:
			endTree(allGone)
			return 128 + int(syscall.SIGKILL), nil
		}
	}
	signalTree(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-allGone:
		return code, nil
	case <-t.C:
	case <-gone:
	}
	endTree(allGone)
	return code, nil
}

// endTree kills every descendant of this process until none is left (or
// a second has passed: what keeps forking while killed).
func endTree(allGone <-chan struct{}) {
	end := time.Now().Add(time.Second)
	for time.Now().Before(end) {
		signalTree(syscall.SIGKILL)
		select {
		case <-allGone:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// signalTree sends sig to every descendant of this process.
func signalTree(sig syscall.Signal) { proc.SignalTree(os.Getpid(), sig) }
