// Package procid tells a process apart from a later one that got the
// same pid: Linux reuses pids, and after a reboot a journaled pid names
// some other program. A process is its pid, its start time (clock ticks
// after boot, field 22 of /proc/<pid>/stat) and the boot it started in
// (/proc/sys/kernel/random/boot_id).
package procid

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/muster-run/muster"
)

// BootID returns this boot's id; empty where the kernel does not say.
var BootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// ErrUnknown is returned by StartTime where /proc does not tell.
var ErrUnknown = errors.New("process start time unknown")

// StartTime returns when pid started, in clock ticks after boot; an
// error (os.ErrNotExist inside) when there is no such process.
func StartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, ErrUnknown)
	}
	f := strings.Fields(string(b[i+1:]))
	const startField = 22 - 3 // fields after comm start at the 3rd
	if len(f) <= startField {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, ErrUnknown)
	}
	return strconv.ParseUint(f[startField], 10, 64)
}

// Of returns the identity of the running process pid; Start and Boot are
// zero where /proc does not tell.
func Of(pid int) muster.Process {
	p := muster.Process{PID: pid, Boot: BootID()}
	if st, err := StartTime(pid); err == nil {
		p.Start = st
	}
	return p
}

// Check says whether p, as journaled, may still be running now as the
// same process: nil when it may (its pid runs with the same start time
// in the same boot, or only its group is left), else why not. A process
// journaled without an identity (an older journal, a system without
// /proc) cannot be checked: nil.
func Check(p muster.Process) error {
	if p.Boot != "" && BootID() != "" && p.Boot != BootID() {
		return fmt.Errorf("pid %d was journaled in another boot (%s; this one is %s)", p.PID, p.Boot, BootID())
	}
	if p.Start == 0 {
		return nil
	}
	st, err := StartTime(p.PID)
	if err != nil {
		// The leader is gone; while members of its group live, Linux
		// does not hand its pid to a new process.
		return nil
	}
	if st != p.Start {
		return fmt.Errorf("pid %d is another process now (started at tick %d, the agent at %d)", p.PID, st, p.Start)
	}
	return nil
}
