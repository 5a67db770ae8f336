package confine

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// minABI is the oldest Landlock ABI muster uses: ABI 2 lets files move
// between writable directories (git renames objects into place; under
// ABI 1 go-landlock's best effort would not confine at all).
const minABI = 2

func probe() Status {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return Status{Reason: fmt.Sprintf("the kernel has no Landlock (%v); it needs Linux 5.19 or later with Landlock enabled (lsm=landlock)", err)}
	}
	if v < minABI {
		return Status{Reason: fmt.Sprintf("the kernel's Landlock ABI %d is too old (want %d: Linux 5.19 or later)", v, minABI)}
	}
	return Status{ABI: v}
}

// exec confines the calling thread and replaces the process with the
// program at path. Reading and executing stay allowed below readable
// (ReadRoots: everywhere but the hidden paths); writing only below
// writable and Devices (paths that do not exist are skipped). It returns
// only on failure.
func exec(path string, argv, writable, readable []string) (int, error) {
	// The ruleset and the capabilities bind this OS thread, which then
	// runs execve: the other threads end with the old program.
	runtime.LockOSThread()
	if err := confineThread(writable, readable); err != nil {
		return 125, err
	}
	if err := closeStrays(); err != nil {
		return 125, fmt.Errorf("cannot confine: %w", err)
	}
	err := syscall.Exec(path, argv, os.Environ())
	return 126, fmt.Errorf("exec %s: %w", argv[0], err)
}

// confineThread confines the calling OS thread, which the caller has
// locked (runtime.LockOSThread) and keeps locked until the thread ends:
// every capability dropped, no_new_privs, and a Landlock domain in which
// reading and executing stay allowed below readable (nil: everywhere)
// and writing only below writable and Devices (paths that do not exist
// are skipped). The
// kernel keeps all three per thread, and a process the thread starts
// (fork, clone, execve) inherits them; the process's other threads keep
// theirs.
func confineThread(writable, readable []string) error {
	// The newest ABI go-landlock knows, brought down to the kernel's:
	// file system rights and IPC scopes (a confined process can neither
	// signal nor reach through abstract sockets the processes outside
	// its domain, muster included), but not the network, which agents
	// need.
	cfg := landlock.V11
	cfg.HandledAccessNet = 0
	var dirs, files []string
	for _, p := range append(append([]string(nil), writable...), Devices...) {
		fi, err := os.Stat(p)
		switch {
		case err != nil:
		case fi.IsDir():
			dirs = append(dirs, p)
		default:
			files = append(files, p)
		}
	}
	rules := append(readRules(readable),
		landlock.RWDirs(dirs...).WithRefer().WithIoctlDev(),
		landlock.RWFiles(files...).WithIoctlDev(),
	)
	fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("cannot confine: %w", err)
	}
	if fd < 0 {
		return fmt.Errorf("cannot confine: the kernel enforces none of the rules")
	}
	defer unix.Close(fd)
	// A fresh, anonymous session keyring: the program must not find the
	// keys of the session muster runs in (a login's Kerberos tickets and
	// tokens), which no file rule covers. The keyring is the thread's,
	// and this thread starts or becomes the program.
	if _, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); errno != 0 && errno != unix.ENOSYS {
		return fmt.Errorf("cannot confine: a session keyring of its own: %w", errno)
	}
	if err := dropCapabilities(); err != nil {
		return fmt.Errorf("cannot confine: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("cannot confine: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("cannot confine: landlock_restrict_self: %w", err)
	}
	if err := clearCapabilities(); err != nil {
		return fmt.Errorf("cannot confine: %w", err)
	}
	return nil
}

// readRules grants reading and executing below each of readable (nil:
// "/"), as directories or files by what each is.
func readRules(readable []string) []landlock.Rule {
	if len(readable) == 0 {
		return []landlock.Rule{landlock.RODirs("/")}
	}
	var dirs, files []string
	for _, p := range readable {
		fi, err := os.Stat(p)
		switch {
		case err != nil:
		case fi.IsDir():
			dirs = append(dirs, p)
		default:
			files = append(files, p)
		}
	}
	return []landlock.Rule{landlock.RODirs(dirs...), landlock.ROFiles(files...)}
}

// closeStrays marks every descriptor but stdin, stdout and stderr
// close-on-exec: one muster inherited without the flag (a make
// jobserver's pipe, a socket a launcher left open), which Go's exec
// passes on to every child, must not reach the program, past every mount
// and namespace.
func closeStrays() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	ents, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return fmt.Errorf("close the descriptors muster inherited: %w (%w)", err, rerr)
	}
	for _, e := range ents {
		if fd, perr := strconv.Atoi(e.Name()); perr == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}
