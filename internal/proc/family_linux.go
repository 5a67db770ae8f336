package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/muster-run/muster/internal/procid"
)

// readStat reads /proc/PID/stat; ok is false when the process is gone.
func readStat(pid int) (info, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return info{}, false
	}
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice threads
	// itrealvalue starttime ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return info{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return info{}, false
	}
	p := info{pid: pid, zombie: (f[0] == "Z" || f[0] == "X") && Defunct(pid)}
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgid, _ = strconv.Atoi(f[2])
	p.sid, _ = strconv.Atoi(f[3])
	p.start, _ = strconv.ParseUint(f[19], 10, 64)
	return p, true
}

// Defunct tells whether a process that /proc shows in state Z or X has
// ended whole. The state is its first thread's: a process whose first
// thread exited (SYS_exit) while another thread runs shows Z as well,
// and is alive, reachable by a signal and able to fork.
func Defunct(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return true
	}
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X' {
			return false
		}
	}
	return true
}

// scan lists every process.
func scan() []info {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := make([]info, 0, len(names))
	for _, n := range names {
		if n == "" || n[0] < '0' || n[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if p, ok := readStat(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// SignalTree sends sig to every live descendant of root (from a scan of
// /proc), each through signalIdentified: a pid the kernel gave to
// another process since the scan is never signalled. __confine ends
// what a program left behind with it, as that program's subreaper.
func SignalTree(root int, sig syscall.Signal) {
	children := map[int][]info{}
	for _, p := range scan() {
		children[p.ppid] = append(children[p.ppid], p)
	}
	seen := map[int]bool{}
	next := []int{root}
	for len(next) > 0 {
		pid := next[len(next)-1]
		next = next[:len(next)-1]
		for _, c := range children[pid] {
			if seen[c.pid] || c.zombie {
				continue
			}
			seen[c.pid] = true
			signalIdentified(c, sig)
			next = append(next, c.pid)
		}
	}
}

// markOf returns the value of MarkEnv in the process's environment ("":
// none, or not readable).
func markOf(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	key := []byte(MarkEnv + "=")
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, key); ok {
			return string(v)
		}
	}
	return ""
}

// self is this process, read on first use.
var self = sync.OnceValue(func() info {
	p, _ := readStat(os.Getpid())
	return p
})

// members lists the live processes of the family: the leader, every
// process of its process group or session, every process whose
// environment carries the family's mark (a daemon that left the session
// with setsid keeps it), and every descendant of those. Processes older
// than the leader are never members.
func (f *family) members() []info {
	all := scan()
	children := map[int][]info{}
	for _, p := range all {
		children[p.ppid] = append(children[p.ppid], p)
	}
	in := map[int]bool{}
	var out []info
	var add func(p info)
	add = func(p info) {
		if in[p.pid] || p.pid == self().pid || p.zombie {
			return
		}
		in[p.pid] = true
		out = append(out, p)
		for _, c := range children[p.pid] {
			add(c)
		}
	}
	for _, p := range all {
		if p.start < f.start || p.pid == self().pid {
			continue
		}
		if p.pid == f.leader || p.pgid == f.leader || p.sid == f.leader || markOf(p.pid) == f.mark {
			add(p)
		}
	}
	return out
}

// signal sends sig to every live member; it reports whether there was
// any. Each process is signalled through a pidfd after its start time is
// checked again, so a pid the kernel gave to another process since the
// scan is never signalled.
func (f *family) signal(sig syscall.Signal) bool {
	ms := f.members()
	f.mu.Lock()
	if f.seen == nil {
		f.seen = map[int]info{}
	}
	for _, p := range ms {
		f.seen[p.pid] = p
	}
	f.mu.Unlock()
	for _, p := range ms {
		signalIdentified(p, sig)
	}
	return len(ms) > 0
}

// signalIdentified signals p only if the process with its pid still has
// its start time.
func signalIdentified(p info, sig syscall.Signal) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if err != nil {
		return // gone, or pidfds unsupported: then not at all rather than maybe the wrong one
	}
	defer unix.Close(fd)
	if now, ok := readStat(p.pid); !ok || now.start != p.start {
		return
	}
	_ = unix.PidfdSendSignal(fd, sig, nil, 0)
}

// reap waits for the members signalled so far that became muster's
// children (it is their subreaper), so that none stays a zombie. Only
// those: a zombie no longer shows its environment, and any other child
// may be a process an exec.Cmd waits for. It gives up after about a
// second.
func (f *family) reap() {
	f.mu.Lock()
	seen := make([]info, 0, len(f.seen))
	for _, m := range f.seen {
		seen = append(seen, m)
	}
	f.mu.Unlock()
	for i := 0; i < 50; i++ {
		left := false
		for _, m := range seen {
			if m.pid == f.leader {
				continue
			}
			p, ok := readStat(m.pid)
			if !ok || p.start != m.start || p.ppid != self().pid {
				continue // gone, or not ours to reap
			}
			if !p.zombie {
				left = true
				continue
			}
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
		}
		if !left {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BecomeSubreaper makes this process the child subreaper of its
// descendants: an orphan (a daemon whose parent exited) becomes muster's
// child instead of init's, so it stays in muster's tree until muster
// stops it.
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// startOf returns the start time of pid (0 when it is gone).
func startOf(pid int) uint64 {
	st, _ := procid.StartTime(pid)
	return st
}

// KillStale kills every process that one of owners (see Owner), no
// longer running, left behind: after muster was killed (kill -9) or
// crashed before it could stop them. A process is only killed when its
// mark names one of owners and that muster process is gone (same pid
// with another start time, or none). Processes of the process groups in
// groups (the agents the journal records, which the resume checks and
// stops itself) are left to that. It returns how many it killed.
func KillStale(owners map[string]bool, groups map[int]bool) int {
	n := 0
	alive := map[string]bool{}
	for _, p := range scan() {
		if p.pid == self().pid || p.zombie || groups[p.pgid] {
			continue
		}
		m := markOf(p.pid)
		if m == "" {
			continue
		}
		owner, ok := markOwner(m)
		if !ok || owner == ownMark() || !owners[owner] {
			continue
		}
		live, seen := alive[owner]
		if !seen {
			pidText, startText, _ := strings.Cut(owner, ".")
			pid, _ := strconv.Atoi(pidText)
			st, _ := strconv.ParseUint(startText, 10, 64)
			live = pid > 0 && startOf(pid) == st
			alive[owner] = live
		}
		if live {
			continue
		}
		signalIdentified(p, syscall.SIGKILL)
		n++
	}
	return n
}

// waitExited returns once the process pid (a child) has exited, without
// reaping it (exec.Cmd.Wait does that afterwards); false when it could
// not wait so.
func waitExited(pid int) bool {
	for {
		var si unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &si, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			return err == nil
		}
	}
}
