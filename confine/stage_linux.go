package confine

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/muster-run/muster"
)

// Masked are the directories stage one covers with a private tmpfs of the
// invocation's own.
var Masked = []string{"/tmp", "/dev/shm"}

// runStageOne is stage one of the sandbox, started by internal/proc in new
// namespaces: it builds them, starts the program at path confined and
// supervises it (see muster.ConfineCommand).
func runStageOne(o Options, path string) (int, error) {
	if err := stageOne(o, path); err != nil {
		return 125, err
	}
	return supervise(o, path)
}

// stageOne builds the mount namespace and the network of the sandbox;
// prog, when not empty, is the program to run (bound back read-only if
// it lies under a masked or hidden directory, as are the working
// directory and the PATH directories that do).
func stageOne(o Options, prog string) error {
	if os.Getpid() != 1 {
		return fmt.Errorf("--ns: not the first process of a new PID namespace (pid %d): muster starts it so", os.Getpid())
	}
	if err := buildMounts(o, prog); err != nil {
		return err
	}
	if o.HostNet {
		return nil
	}
	if err := loopbackUp(); err != nil {
		return err
	}
	if o.BridgePort > 0 {
		return handBridge(o.BridgePort)
	}
	return nil
}

// mount is one bind-back or one cover of the mount namespace.
type mount struct {
	path string
	fd   int  // a detached copy of the tree to bind back (-1: a cover)
	dir  bool // the path is a directory
	ro   bool
}

func buildMounts(o Options, prog string) error {
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mount namespace private: %w", err)
	}
	ms, err := planMounts(o, prog, cwd)
	defer func() {
		for _, m := range ms {
			if m.fd >= 0 {
				unix.Close(m.fd)
			}
		}
	}()
	if err != nil {
		return err
	}
	var tmpfs []string
	for _, m := range ms {
		covered, err := attach(m)
		if err != nil {
			return err
		}
		if covered && m.dir && !isMasked(m.path) {
			tmpfs = append(tmpfs, m.path)
		}
	}
	// The covers of hidden directories stay empty.
	for _, p := range tmpfs {
		if err := unix.MountSetattr(unix.AT_FDCWD, p, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("make the cover of %s read-only: %w", p, err)
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount a fresh /proc: %w", err)
	}
	if err := ownTerminals(); err != nil {
		return err
	}
	if err := os.Chdir(cwd); err != nil {
		return fmt.Errorf("the working directory %s is not in the sandbox: %w", cwd, err)
	}
	return nil
}

// ownTerminals puts a devpts instance of the sandbox's own on /dev/pts,
// and its ptmx on /dev/ptmx: the user's terminals (another window's
// shell, the one muster draws on), which Landlock lets a program write
// since /dev/pts is writable, are not there; terminals the program opens
// itself are. Where devpts cannot be mounted, /dev/pts is an empty
// read-only cover.
func ownTerminals() error {
	if fi, err := os.Stat("/dev/pts"); err != nil || !fi.IsDir() {
		return nil
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		if err := unix.Mount("tmpfs", "/dev/pts", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC|unix.MS_RDONLY, "size=4k"); err != nil {
			return fmt.Errorf("cover /dev/pts: %w", err)
		}
		return nil
	}
	if fi, err := os.Lstat("/dev/ptmx"); err == nil && fi.Mode()&os.ModeSymlink == 0 {
		if err := unix.Mount("/dev/pts/ptmx", "/dev/ptmx", "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/ptmx to the sandbox's own terminals: %w", err)
		}
	}
	return nil
}

// planMounts lists the mounts of the namespace in the order they are put
// in place: the trees to bind back, detached before anything is covered,
// and the covers (Masked and o.Hide), shallow first.
func planMounts(o Options, prog, cwd string) ([]mount, error) {
	r := newResolver()
	covers := r.existing(append(append([]string(nil), Masked...), o.Hide...))
	under := func(p string, roots []string) bool {
		for _, r := range roots {
			if within(p, r) {
				return true
			}
		}
		return false
	}
	ro := r.existing(o.ReadOnly)
	// The working directory muster chose and the program are seen,
	// read-only unless writable, wherever they lie.
	extra := []string{cwd}
	if prog != "" {
		extra = append(extra, prog)
	}
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if filepath.IsAbs(d) {
			extra = append(extra, d)
		}
	}
	for _, p := range r.existing(extra) {
		if under(p, covers) && !under(p, ro) {
			ro = append(ro, p)
		}
	}
	var ms []mount
	seen := map[string]bool{}
	for _, p := range r.existing(o.Write) {
		if seen[p] || (!under(p, covers) && !under(p, ro)) {
			continue
		}
		seen[p] = true
		m, err := detach(p, false)
		if err != nil {
			return ms, err
		}
		ms = append(ms, m)
	}
	for _, p := range ro {
		if seen[p] {
			continue
		}
		seen[p] = true
		m, err := detach(p, true)
		if err != nil {
			return ms, err
		}
		ms = append(ms, m)
	}
	for _, p := range covers {
		if fi, err := os.Stat(p); err == nil {
			ms = append(ms, mount{path: p, fd: -1, dir: fi.IsDir()})
		}
	}
	// Shallow first: a bind-back inside a cover lands on it, a cover
	// inside a bind-back covers part of it. At one depth, covers first.
	sort.SliceStable(ms, func(i, j int) bool {
		di, dj := depth(ms[i].path), depth(ms[j].path)
		if di != dj {
			return di < dj
		}
		return ms[i].fd < 0 && ms[j].fd >= 0
	})
	return ms, nil
}

func isMasked(p string) bool {
	for _, m := range Masked {
		if p == m {
			return true
		}
	}
	return false
}

// detach takes a copy of the tree at p, to bind back once the covers are
// in place.
func detach(p string, ro bool) (mount, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return mount{}, err
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return mount{}, fmt.Errorf("bind %s: open_tree: %w", p, err)
	}
	if ro {
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
			unix.Close(fd)
			return mount{}, fmt.Errorf("bind %s read-only: %w", p, err)
		}
	} else {
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
			unix.Close(fd)
			return mount{}, fmt.Errorf("bind %s: %w", p, err)
		}
	}
	return mount{path: p, fd: fd, dir: fi.IsDir(), ro: ro}, nil
}

// attach puts m in place: a cover (a tmpfs on a directory, /dev/null on
// anything else, read-only and nodev) where its path still exists, or the detached tree at
// its path, made first when a cover hid it. covered reports a cover put
// in place.
func attach(m mount) (covered bool, err error) {
	if m.fd < 0 {
		if _, err := os.Lstat(m.path); err != nil {
			return false, nil // already hidden by a cover above it
		}
		if m.dir {
			mode := "mode=0755,size=64k"
			if isMasked(m.path) {
				mode = "mode=1777"
			}
			if err := unix.Mount("tmpfs", m.path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, mode); err != nil {
				return false, fmt.Errorf("cover %s: %w", m.path, err)
			}
			return true, nil
		}
		if err := unix.Mount("/dev/null", m.path, "", unix.MS_BIND, ""); err != nil {
			return false, fmt.Errorf("cover %s: %w", m.path, err)
		}
		// Read-only and nodev: opening the cover fails with EACCES, so a
		// write to a hidden file (the repository's .git/config) is refused
		// as a write there would be, not swallowed by /dev/null.
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOSUID}
		if err := unix.MountSetattr(unix.AT_FDCWD, m.path, 0, attr); err != nil {
			return false, fmt.Errorf("make the cover of %s read-only: %w", m.path, err)
		}
		return true, nil
	}
	if _, err := os.Lstat(m.path); err != nil {
		if m.dir {
			err = os.MkdirAll(m.path, 0o755)
		} else if err = os.MkdirAll(filepath.Dir(m.path), 0o755); err == nil {
			var f *os.File
			if f, err = os.OpenFile(m.path, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				f.Close()
			}
		}
		if err != nil {
			return false, fmt.Errorf("bind %s: %w", m.path, err)
		}
	}
	if err := unix.MoveMount(m.fd, "", unix.AT_FDCWD, m.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return false, fmt.Errorf("bind %s: move_mount: %w", m.path, err)
	}
	return false, nil
}

func within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

// loopbackUp brings up lo: a new network namespace's starts down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up the loopback: %w", err)
	}
	return nil
}

// handBridge binds 127.0.0.1:port in this network namespace, hands the
// listener to muster over muster.BridgeFD and waits until muster says
// the program may start.
func handBridge(port int) error {
	unix.CloseOnExec(muster.BridgeFD)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	defer unix.Close(fd)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("bridge: bind 127.0.0.1:%d: %w", port, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		return fmt.Errorf("bridge: listen: %w", err)
	}
	if err := unix.Sendmsg(muster.BridgeFD, []byte{'L'}, unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("bridge: hand the listener to muster: %w", err)
	}
	buf := make([]byte, 1)
	n, err := unix.Read(muster.BridgeFD, buf)
	if err != nil {
		return fmt.Errorf("bridge: muster did not take the listener: %w", err)
	}
	if n != 1 {
		return errors.New("bridge: muster did not take the listener")
	}
	_ = unix.Close(muster.BridgeFD)
	return nil
}

// supervise starts the program, confined (startConfined), in its own
// process group, forwards SIGTERM and SIGINT to that group, reaps every
// process of the namespace, and once the program has exited gives what
// it left behind SIGTERM and the grace before returning (the namespace
// then ends, and everything in it).
func supervise(o Options, path string) (int, error) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	gone := watchLife(o.Life)
	writable := append(append([]string(nil), o.Write...), Masked...)
	pid, code, err := startConfined(path, o.Argv, writable, nil, true)
	if err != nil {
		return code, err
	}
	progDone := make(chan int, 1)
	allGone := make(chan struct{})
	go reap(pid, progDone, allGone)
	code = -1
	for code < 0 {
		select {
		case s := <-sigs:
			_ = syscall.Kill(-pid, s.(syscall.Signal))
		case code = <-progDone:
		case <-gone:
			return endAll()
		}
	}
	grace := o.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	// kill(-1) from PID 1 reaches every other process of the namespace.
	if syscall.Kill(-1, syscall.SIGTERM) == nil {
		t := time.NewTimer(grace)
		defer t.Stop()
		for done := false; !done; {
			select {
			case s := <-sigs:
				_ = syscall.Kill(-1, s.(syscall.Signal))
			case <-gone:
				return endAll()
			case <-allGone:
				done = true
			case <-t.C:
				done = true
			}
		}
	}
	return code, nil
}

// watchLife returns a channel closed when muster is gone: when the
// lifeline fd (0: none, and the channel never closes) reads its end.
// The program never inherits the descriptor.
func watchLife(fd int) <-chan struct{} {
	gone := make(chan struct{})
	if fd <= 0 {
		return gone
	}
	unix.CloseOnExec(fd)
	go func() {
		defer close(gone)
		b := make([]byte, 1)
		for {
			if n, err := unix.Read(fd, b); n <= 0 && err != unix.EINTR {
				return
			}
		}
	}()
	return gone
}

// endAll kills everything in the namespace (kill(-1) from its first
// process) when muster is gone: no one waits for the program's status,
// and nothing of the invocation may go on working without muster.
func endAll() (int, error) {
	_ = syscall.Kill(-1, syscall.SIGKILL)
	return 128 + int(syscall.SIGKILL), nil
}

// reap waits for every child (orphans of the namespace become this
// process's), sends the program's exit status on progDone and closes
// allGone when no child is left.
func reap(prog int, progDone chan<- int, allGone chan<- struct{}) {
	defer close(allGone)
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		if pid == prog {
			switch {
			case ws.Exited():
				progDone <- ws.ExitStatus()
			case ws.Signaled():
				progDone <- 128 + int(ws.Signal())
			}
		}
	}
}

// startConfined starts the program at path (in its own process group
// when ownGroup is set) from a locked OS thread of its own that it first
// confines (confineThread, reading only below readable when it is set:
// no capability, no_new_privs, Landlock): the kernel gives the child that
// thread's credentials and Landlock domain, so the program starts
// confined without a second start of muster, while this process's other
// threads keep what stage one needs to supervise (a signal and wait4 for
// everything in the namespace). The thread ends with its goroutine,
// still locked, so the Go runtime never runs anything else on it; it is
// never the process's first thread, which cannot end.
func startConfined(path string, argv, writable, readable []string, ownGroup bool) (pid, code int, err error) {
	ch := make(chan startResult, 1)
	go startOn(ch, path, argv, writable, readable, ownGroup)
	s := <-ch
	return s.pid, s.code, s.err
}

// startResult is what startOn sends: the program's pid, or the exit
// status and error of a start that failed.
type startResult struct {
	pid  int
	code int
	err  error
}

// startOn is startConfined's goroutine: it locks its OS thread, confines
// it and starts the program from it, and sends the result on ch.
func startOn(ch chan<- startResult, path string, argv, writable, readable []string, ownGroup bool) {
	var start func()
	start = func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		if unix.Gettid() == unix.Getpid() {
			// The process's first thread, which never exits: confined,
			// it would stay in the program's Landlock domain without a
			// capability, and the program could ptrace this process
			// through it. Another goroutine does it, on another thread
			// (this one holds the first), and this one lets it go.
			done := make(chan struct{})
			go func() { defer close(done); start() }()
			<-done
			runtime.UnlockOSThread()
			return
		}
		if err := confineThread(writable, readable); err != nil {
			ch <- startResult{code: 125, err: err}
			return
		}
		if err := closeStrays(); err != nil {
			ch <- startResult{code: 125, err: fmt.Errorf("cannot confine: %w", err)}
			return
		}
		pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
			Env: os.Environ(), Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Setpgid: ownGroup},
		})
		if err != nil {
			ch <- startResult{code: 126, err: fmt.Errorf("exec %s: %w", argv[0], err)}
			return
		}
		ch <- startResult{pid: pid}
	}
	start()
}
