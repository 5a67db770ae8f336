package confine

import (
	"os"
	"os/signal"
	"strconv"
	"strings"
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
			return endTree(allGone)
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
	_, _ = endTree(allGone)
	return code, nil
}

// endTree kills every descendant of this process until none is left (or
// a second has passed: what keeps forking while killed), for the exit
// status of a program muster no longer waits for.
func endTree(allGone <-chan struct{}) (int, error) {
	end := time.Now().Add(time.Second)
	for {
		signalTree(syscall.SIGKILL)
		select {
		case <-allGone:
			return 128 + int(syscall.SIGKILL), nil
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(end) {
			return 128 + int(syscall.SIGKILL), nil
		}
	}
}

// signalTree sends sig to every descendant of this process, each
// through a pidfd opened before its parent and start time are read
// again: a pid the kernel gave to another process since the scan is
// never signalled.
func signalTree(sig syscall.Signal) {
	for pid, start := range descendants() {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		if _, now, ok := statOf(pid); ok && now == start {
			_ = unix.PidfdSendSignal(fd, sig, nil, 0)
		}
		unix.Close(fd)
	}
}

// descendants returns the live descendants of this process, by pid,
// with their start times, from /proc.
func descendants() map[int]uint64 {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	starts := map[int]uint64{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, start, ok := statOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
			starts[pid] = start
		}
	}
	out := map[int]uint64{}
	next := []int{os.Getpid()}
	for len(next) > 0 {
		p := next[len(next)-1]
		next = next[:len(next)-1]
		for _, c := range children[p] {
			if _, seen := out[c]; !seen {
				out[c] = starts[c]
				next = append(next, c)
			}
		}
	}
	return out
}

// statOf reads a process's parent and start time (in clock ticks since
// boot) from /proc/PID/stat; ok is false for one that is gone or a
// zombie (which a signal no longer reaches, and its parent reaps), but
// not for one whose first thread alone has exited (proc.Defunct).
func statOf(pid int) (ppid int, start uint64, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || (f[0] == "Z" || f[0] == "X") && proc.Defunct(pid) {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	return ppid, start, err1 == nil && err2 == nil
}
