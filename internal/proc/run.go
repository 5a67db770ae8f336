package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/muster-run/muster"
)

// invocation is one call of Run between its start and its end: the
// three seams of Run are launch (start), watch (stop on a timeout, a
// stall or a cancellation) and finish (wait, then stop the family).
type invocation struct {
	s      Spec
	cmd    *exec.Cmd
	fam    *family
	bridge *bridgePair
	cg     *cgroup  // the invocation's cgroup (nil: no limits)
	hold   *os.File // v1: muster's end of the hold pipe, until placed
	holdR  *os.File // its other end, the child's
	life   *os.File // the sandbox's lifeline: muster's end, held until Run returns
	lifeR  *os.File // its other end, stage one's, until the start
	start  time.Time
	pid    int

	stdout, stderr *os.File

	activity    chan struct{} // output seen (for Stall)
	waitDone    chan struct{} // finish is done with the process
	exited      chan struct{} // the leader has exited
	stopped     chan struct{} // muster stops the invocation
	stopAt      time.Time     // when, set before stopped closes
	readersDone chan struct{}
	watcherDone chan struct{}

	res      Result
	stopOnce sync.Once
	stopping sync.WaitGroup // fam.stop, done before the leader is reaped

	panicMu  sync.Mutex
	panicked *muster.PanicError
}

// command builds the exec.Cmd of r.s: the launcher (the sandbox's
// confinement step) before the program, the family's mark in its
// environment, its own session, the sandbox's namespaces and its cgroup.
func (r *invocation) command() error {
	s := r.s
	if len(s.Argv) == 0 {
		return errors.New("empty command")
	}
	argv := s.Argv
	if s.Confine != nil {
		s.Launcher = s.Confine.Command(s.Grace)
	}
	r.fam = &family{mark: newMark()}
	limited := s.Confine != nil && (s.Confine.MaxPids > 0 || s.Confine.MaxMemory > 0)
	var extra []*os.File
	if limited {
		var err error
		if r.cg, err = newCgroup("muster-"+r.fam.mark, s.Confine.MaxPids, s.Confine.MaxMemory); err != nil {
			return fmt.Errorf("start %s: %w", s.Argv[0], err)
		}
	}
	if len(s.Launcher) > 0 {
		prog, err := resolve(argv[0], s.Dir)
		if err != nil {
			return fmt.Errorf("start %s: %w", s.Argv[0], err)
		}
		argv = append(append(append([]string(nil), s.Launcher...), prog), argv[1:]...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	r.cmd = cmd
	cmd.Dir = s.Dir
	cmd.Env = withEnv(s.Env, MarkEnv, r.fam.mark)
	// Its own session (and so its own process group): what it starts
	// stays in the session unless it calls setsid, and then carries the
	// mark all the same.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if c := s.Confine; c != nil && c.Namespaces {
		cmd.SysProcAttr = SandboxAttr(c.HostNetwork)
		if c.Bridge != nil && !c.HostNetwork {
			var err error
			if r.bridge, err = newBridgePair(); err != nil {
				return err
			}
			extra = append(extra, r.bridge.child) // muster.BridgeFD
		}
	}
	if s.Confine != nil {
		if err := r.lifeline(&extra); err != nil {
			return err
		}
	}
	if r.cg != nil {
		if err := r.placeInCgroup(&extra); err != nil {
			return err
		}
	}
	cmd.ExtraFiles = extra
	if s.Stdin != nil {
		cmd.Stdin = s.Stdin
	}
	// Once the process has exited, the rest of the prompt is not wanted:
	// a leftover child that holds stdin must not keep Wait waiting.
	cmd.WaitDelay = time.Second
	return nil
}

// lifeline gives the confining process (stage one of the sandbox, or
// __confine without namespaces) the read end of a pipe whose write end
// only muster holds, open until Run returns (--life FD): when muster
// dies, however it dies, it reads the end of the pipe and ends the
// invocation, the agent with it, at once, rather than running on until
// a resume finds it.
func (r *invocation) lifeline(extra *[]*os.File) (err error) {
	r.life, r.lifeR, err = r.childPipe(extra, "--life")
	if err != nil {
		return fmt.Errorf("sandbox lifeline: %w", err)
	}
	return nil
}

// placeInCgroup starts the process in its cgroup (v2: at the clone,
// SysProcAttr.UseCgroupFD) or holds it until muster has placed it there
// (v1: the confinement step waits for a byte on a pipe, --hold, before
// anything else, so no process of the invocation runs outside it).
func (r *invocation) placeInCgroup(extra *[]*os.File) (err error) {
	if r.cg.startIn(r.cmd.SysProcAttr) {
		return nil
	}
	r.hold, r.holdR, err = r.childPipe(extra, "--hold")
	if err != nil {
		return fmt.Errorf("cgroup hold ([run] max_pids, max_memory): %w", err)
	}
	return nil
}

// childPipe makes a pipe whose read end the confinement step gets among
// extra, named by "OPTION FD" among its options (before the "--" of
// "muster __confine OPTIONS -- PROG ARGS"); mine is muster's end.
func (r *invocation) childPipe(extra *[]*os.File, option string) (mine, theirs *os.File, err error) {
	i := slices.Index(r.cmd.Args, "--")
	if i < 2 {
		return nil, nil, errors.New("it needs the confinement step")
	}
	theirs, mine, err = os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	*extra = append(*extra, theirs)
	fd := strconv.Itoa(3 + len(*extra) - 1)
	r.cmd.Args = append(append(append([]string(nil), r.cmd.Args[:i]...), option, fd), r.cmd.Args[i:]...)
	return mine, theirs, nil
}

// launch starts the process of s. It returns nil and the result (an
// error, or a panic of a handler that already stopped the process) when
// the invocation ended before it ran.
func launch(s Spec) (*invocation, Result, error) {
	r := &invocation{s: s}
	if err := r.command(); err != nil {
		r.release()
		return nil, Result{}, err
	}
	cmd := r.cmd
	// Our own pipes, not cmd.StdoutPipe: Wait then returns when the
	// process exits, even while a leftover child holds its output open.
	var outW, errW *os.File
	var err error
	if r.stdout, outW, err = os.Pipe(); err != nil {
		r.release()
		return nil, Result{}, err
	}
	if r.stderr, errW, err = os.Pipe(); err != nil {
		outW.Close()
		r.release()
		return nil, Result{}, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	r.start = time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if r.lifeR != nil {
		r.lifeR.Close() // stage one's now
		r.lifeR = nil
	}
	if err != nil {
		r.release()
		return nil, Result{}, fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	r.pid = cmd.Process.Pid
	r.fam.leader, r.fam.start = r.pid, startOf(r.pid)
	if err := r.placed(); err != nil {
		_ = syscall.Kill(-r.pid, syscall.SIGKILL)
		_ = cmd.Wait()
		r.release()
		return nil, Result{}, fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	if perr := r.opened(); perr != nil {
		_ = syscall.Kill(-r.pid, syscall.SIGKILL)
		_ = cmd.Wait()
		r.release()
		return nil, Result{ExitCode: -1, Stopped: "panic"}, perr
	}
	return r, Result{}, nil
}

// placed puts the held process in its v1 cgroup and lets it go on.
func (r *invocation) placed() error {
	if r.hold == nil {
		return nil
	}
	r.holdR.Close()
	r.holdR = nil
	defer func() { r.hold.Close(); r.hold = nil }()
	if err := r.cg.join(r.pid); err != nil {
		return err
	}
	if _, err := r.hold.Write([]byte{'G'}); err != nil {
		return fmt.Errorf("cgroup hold: %w", err)
	}
	return nil
}

// opened hands the bridge over and calls OnStart, once the process runs.
func (r *invocation) opened() *muster.PanicError {
	if r.bridge != nil {
		r.bridge.child.Close()
		if perr := openBridge(r.bridge, r.s.Confine.Bridge, r.s.Argv[0]); perr != nil {
			return perr
		}
	}
	if r.s.OnStart != nil {
		return guard("the start handler of "+r.s.Argv[0], func() { r.s.OnStart(r.pid) })
	}
	return nil
}

// release closes what launch opened and removes the cgroup.
func (r *invocation) release() {
	for _, f := range []*os.File{r.hold, r.holdR, r.life, r.lifeR} {
		if f != nil {
			f.Close()
		}
	}
	if r.cg != nil {
		r.cg.kill()
		r.cg.remove()
	}
	if r.bridge != nil {
		r.bridge.close()
	}
	if r.stdout != nil {
		r.stdout.Close()
	}
	if r.stderr != nil {
		r.stderr.Close()
	}
}

func (r *invocation) poke() {
	select {
	case r.activity <- struct{}{}:
	default:
	}
}

// stop stops the invocation (once), saying why.
func (r *invocation) stop(why string) {
	r.stopOnce.Do(func() {
		r.res.Stopped = why
		r.stopAt = time.Now()
		close(r.stopped)
		r.stopping.Add(1)
		go func() { defer r.stopping.Done(); r.fam.stop(r.s.Grace, r.exited) }()
	})
}

// handler wraps fn so that a panic in it (on a reader goroutine, where
// nothing would recover it) stops the process group; its later lines
// are dropped and Run returns the panic.
func (r *invocation) handler(what string, fn func(string)) func(string) {
	if fn == nil {
		return nil
	}
	return func(line string) {
		r.panicMu.Lock()
		dead := r.panicked != nil
		r.panicMu.Unlock()
		if dead {
			return
		}
		if perr := guard(what+" of "+r.s.Argv[0], func() { fn(line) }); perr != nil {
			r.panicMu.Lock()
			r.panicked = perr
			r.panicMu.Unlock()
			r.stop("panic")
		}
	}
}

// read starts the two readers, which end when the pipes close: when the
// process and every child that inherited them have exited, or the group
// is killed.
func (r *invocation) read() {
	r.activity = make(chan struct{}, 1)
	r.waitDone = make(chan struct{})
	r.exited = make(chan struct{})
	r.stopped = make(chan struct{})
	r.readersDone = make(chan struct{})
	r.watcherDone = make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); readLines(r.stdout, r.handler("the output handler", r.s.OnLine), r.poke) }()
	go func() { defer wg.Done(); readLines(r.stderr, r.handler("the stderr handler", r.s.OnStderr), r.poke) }()
	go func() { wg.Wait(); close(r.readersDone) }()
}

// watch stops the invocation on a cancellation, the timeout or a stall;
// it lives until finish is done with the process.
func (r *invocation) watch(ctx context.Context) {
	defer close(r.watcherDone)
	var timeout <-chan time.Time
	if r.s.Timeout > 0 {
		t := time.NewTimer(r.s.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var stall *time.Timer
	var stallC <-chan time.Time
	if r.s.Stall > 0 {
		stall = time.NewTimer(r.s.Stall)
		defer stall.Stop()
		stallC = stall.C
	}
	for {
		select {
		case <-r.waitDone:
			return
		case <-ctx.Done():
			r.stop("cancelled")
			return
		case <-timeout:
			r.stop("timeout")
			return
		case <-stallC:
			r.stop("stall")
			return
		case <-r.activity:
			if stall != nil {
				if !stall.Stop() {
					select {
					case <-stall.C:
					default:
					}
				}
				stall.Reset(r.s.Stall)
			}
		}
	}
}

// finish waits for the leader, stops what it left behind and returns how
// the invocation ended.
func (r *invocation) finish() (Result, error) {
	// Wait for the leader to exit but leave it unreaped (a zombie) until
	// its family is stopped: its pid, which is also its session's and its
	// group's id, cannot be given to another process meanwhile, so what
	// is found by those ids is the family's.
	var err error
	unreaped := waitExited(r.pid)
	if !unreaped {
		err = r.cmd.Wait()
	}
	close(r.exited)
	r.stopFamily()
	close(r.waitDone)
	<-r.watcherDone
	r.stopping.Wait()
	if unreaped {
		err = r.cmd.Wait()
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // exited 0; only a leftover child held stdin
	}
	r.res.Duration = time.Since(r.start)
	r.res.ExitCode = exitCode(err)
	if r.cg != nil {
		r.res.Limit = r.cg.hit()
	}
	if r.panicked != nil {
		return r.res, r.panicked
	}
	return r.res, nil
}

// signalFamily gives the family SIGTERM and, unless the output closes
// first, the grace, then SIGKILL, and reaps what became muster's. A stop
// that came while the leader ran (a timeout, a cancellation) gave the
// whole group its SIGTERM then: the rest of that grace is the family's
// too, the leader's exit does not end it. A stop that comes during this
// wait cuts it short.
func (r *invocation) signalFamily() {
	select {
	case <-r.readersDone:
	default:
		stopped := r.stopped
		grace := gracePeriod(r.s.Grace)
		select {
		case <-r.stopped:
			stopped, grace = nil, grace-time.Since(r.stopAt)
		default:
		}
		if r.fam.signal(syscall.SIGTERM) && grace > 0 {
			t := time.NewTimer(grace)
			select {
			case <-r.readersDone:
			case <-t.C:
			case <-stopped:
			}
			t.Stop()
		}
	}
	// No member of the family outlives the invocation.
	r.fam.signal(syscall.SIGKILL)
	r.fam.reap()
}

// stopFamily ends what the exited leader left behind (a server, a
// watcher, a daemon): SIGTERM, then SIGKILL after the grace period
// unless the output closes first (a timeout or a cancellation cuts that
// wait short); then it stops reading what still holds the pipes.
func (r *invocation) stopFamily() {
	// In the sandbox the leader is PID 1 of its own PID namespace, which
	// gave what was left the grace before it exited; its exit made the
	// kernel kill every other process of the namespace, and waited for
	// them, before the leader became the zombie finish saw. No process
	// leaves a PID namespace, so nothing is left to find: the two scans
	// of every process of the machine are saved.
	if c := r.s.Confine; c == nil || !c.Namespaces {
		r.signalFamily()
	}
	// Whatever still holds the pipes is not the family's: stop reading.
	t := time.NewTimer(PipeGrace)
	select {
	case <-r.readersDone:
	case <-t.C:
		r.stdout.Close()
		r.stderr.Close()
		<-r.readersDone
	}
	t.Stop()
}
