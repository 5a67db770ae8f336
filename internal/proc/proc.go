// Package proc starts child processes in their own session and process
// group, streams their output line by line, and stops them with SIGTERM
// then SIGKILL after a grace period: the process and its whole family
// (its group, its session, every process that carries its mark in its
// environment, and their descendants), so that no grandchild outlives
// its invocation, not even a daemon that left with setsid.
package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/redact"
)

// Spec describes a process to run.
type Spec struct {
	Argv  []string
	Dir   string
	Env   []string  // full environment (nil: inherit)
	Stdin io.Reader // nil: /dev/null
	// Grace is the time between SIGTERM and SIGKILL when stopping.
	Grace time.Duration
	// Timeout stops the process after this long (0: none).
	Timeout time.Duration
	// Stall stops the process when it prints nothing for this long (0: none).
	Stall time.Duration
	// OnLine is called for each line of stdout (without the newline), from
	// one goroutine. Lines longer than MaxLine are cut to MaxLine.
	OnLine func(line string)
	// OnStderr is called for each line of stderr, from one goroutine.
	OnStderr func(line string)
	// OnStart is called with the pid once the process runs.
	OnStart func(pid int)
	// Launcher, when set, is a command line that runs the program in its
	// own place (muster __confine ... --): the process is started as
	// Launcher followed by Argv, with Argv[0] resolved first, as exec
	// would, so that a missing program is still a start error.
	Launcher []string
	// Confine, when set, runs the program confined by it (its Command
	// is the launcher; Launcher is then ignored). With its Namespaces the
	// process starts in the sandbox's new namespaces (SandboxAttr), and
	// its Bridge's Serve gets the listener stage one bound inside them
	// before the program starts (closed when Run returns).
	Confine *muster.Confinement
}

// MaxLine bounds one output line kept in memory.
const MaxLine = 4 << 20

// PipeGrace is how long Run still reads the output pipes once the
// process has exited and its family has been stopped: a process muster
// could not find (one that cleared its environment and left the session)
// may hold them open; after PipeGrace they are closed and Run returns.
const PipeGrace = 2 * time.Second

// Result is how a process ended.
type Result struct {
	ExitCode int // -1 when killed by a signal
	// Stopped says why muster stopped it: "", "timeout", "stall", "cancelled".
	Stopped  string
	Duration time.Duration
}

// Run starts the process and waits for it. It returns an error only when
// the process could not start, or a *muster.PanicError when one of the
// handlers (OnStart, OnLine, OnStderr) panicked (the process group is
// then stopped, as on cancellation); a non-zero exit is in Result. When ctx is
// cancelled, or Timeout or Stall elapse, the process group gets SIGTERM,
// then SIGKILL after Grace.
func Run(ctx context.Context, s Spec) (Result, error) {
	if len(s.Argv) == 0 {
		return Result{}, errors.New("empty command")
	}
	argv := s.Argv
	if s.Confine != nil {
		s.Launcher = s.Confine.Command(s.Grace)
	}
	if len(s.Launcher) > 0 {
		prog, err := resolve(argv[0], s.Dir)
		if err != nil {
			return Result{}, fmt.Errorf("start %s: %w", s.Argv[0], err)
		}
		argv = append(append(append([]string(nil), s.Launcher...), prog), argv[1:]...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.Dir
	fam := &family{mark: newMark()}
	cmd.Env = withEnv(s.Env, MarkEnv, fam.mark)
	// Its own session (and so its own process group): what it starts
	// stays in the session unless it calls setsid, and then carries the
	// mark all the same.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var bridge *bridgePair
	if c := s.Confine; c != nil && c.Namespaces {
		cmd.SysProcAttr = SandboxAttr(c.HostNetwork)
		if c.Bridge != nil && !c.HostNetwork {
			var err error
			if bridge, err = newBridgePair(); err != nil {
				return Result{}, err
			}
			defer bridge.close()
			cmd.ExtraFiles = []*os.File{bridge.child} // muster.BridgeFD
		}
	}
	if s.Stdin != nil {
		cmd.Stdin = s.Stdin
	}
	// Once the process has exited, the rest of the prompt is not wanted:
	// a leftover child that holds stdin must not keep Wait waiting.
	cmd.WaitDelay = time.Second
	// Our own pipes, not cmd.StdoutPipe: Wait then returns when the
	// process exits, even while a leftover child holds its output open.
	stdout, outW, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	defer stdout.Close()
	stderr, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return Result{}, err
	}
	defer stderr.Close()
	cmd.Stdout, cmd.Stderr = outW, errW
	start := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		return Result{}, fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	pid := cmd.Process.Pid
	fam.leader, fam.start = pid, startOf(pid)
	if bridge != nil {
		bridge.child.Close()
		if perr := openBridge(bridge, s.Confine.Bridge, s.Argv[0]); perr != nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = cmd.Wait()
			return Result{ExitCode: -1, Stopped: "panic"}, perr
		}
	}
	if s.OnStart != nil {
		if perr := guard("the start handler of "+s.Argv[0], func() { s.OnStart(pid) }); perr != nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = cmd.Wait()
			return Result{ExitCode: -1, Stopped: "panic"}, perr
		}
	}

	activity := make(chan struct{}, 1)
	poke := func() {
		select {
		case activity <- struct{}{}:
		default:
		}
	}
	waitDone := make(chan struct{})
	exited := make(chan struct{})  // the leader has exited
	stopped := make(chan struct{}) // muster stops the invocation
	var res Result
	var stopOnce sync.Once
	var stopping sync.WaitGroup // fam.stop, done before the leader is reaped
	stop := func(why string) {
		stopOnce.Do(func() {
			res.Stopped = why
			close(stopped)
			stopping.Add(1)
			go func() { defer stopping.Done(); fam.stop(s.Grace, exited) }()
		})
	}
	// A handler that panics (on a reader goroutine, where nothing would
	// recover it) stops the process group; its later lines are dropped
	// and Run returns the panic.
	var panicMu sync.Mutex
	var panicked *muster.PanicError
	handler := func(what string, fn func(string)) func(string) {
		if fn == nil {
			return nil
		}
		return func(line string) {
			panicMu.Lock()
			dead := panicked != nil
			panicMu.Unlock()
			if dead {
				return
			}
			if perr := guard(what+" of "+s.Argv[0], func() { fn(line) }); perr != nil {
				panicMu.Lock()
				panicked = perr
				panicMu.Unlock()
				stop("panic")
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	// Both readers end when the pipes close: when the process and every
	// child that inherited them have exited, or the group is killed.
	go func() { defer wg.Done(); readLines(stdout, handler("the output handler", s.OnLine), poke) }()
	go func() { defer wg.Done(); readLines(stderr, handler("the stderr handler", s.OnStderr), poke) }()
	readersDone := make(chan struct{})
	go func() { wg.Wait(); close(readersDone) }()
	// The watcher lives until the process has been waited for.
	watcherDone := make(chan struct{})
	go func() {
		defer close(watcherDone)
		var timeout <-chan time.Time
		if s.Timeout > 0 {
			t := time.NewTimer(s.Timeout)
			defer t.Stop()
			timeout = t.C
		}
		var stall *time.Timer
		var stallC <-chan time.Time
		if s.Stall > 0 {
			stall = time.NewTimer(s.Stall)
			defer stall.Stop()
			stallC = stall.C
		}
		for {
			select {
			case <-waitDone:
				return
			case <-ctx.Done():
				stop("cancelled")
				return
			case <-timeout:
				stop("timeout")
				return
			case <-stallC:
				stop("stall")
				return
			case <-activity:
				if stall != nil {
					if !stall.Stop() {
						select {
						case <-stall.C:
						default:
						}
					}
					stall.Reset(s.Stall)
				}
			}
		}
	}()
	// Wait for the leader to exit but leave it unreaped (a zombie) until
	// its family is stopped: its pid, which is also its session's and its
	// group's id, cannot be given to another process meanwhile, so what
	// is found by those ids is the family's.
	unreaped := waitExited(pid)
	if !unreaped {
		err = cmd.Wait()
	}
	close(exited)
	// The process has exited: the invocation is over. What it left
	// behind (a server, a watcher, a daemon) gets SIGTERM, then SIGKILL
	// after the grace period unless the output closes first; a timeout
	// or a cancellation cuts that wait short.
	select {
	case <-readersDone:
	default:
		if fam.signal(syscall.SIGTERM) {
			t := time.NewTimer(gracePeriod(s.Grace))
			select {
			case <-readersDone:
			case <-t.C:
			case <-stopped:
			}
			t.Stop()
		}
	}
	// No member of the family outlives the invocation.
	fam.signal(syscall.SIGKILL)
	fam.reap()
	// Whatever still holds the pipes is not the family's: stop reading.
	t := time.NewTimer(PipeGrace)
	select {
	case <-readersDone:
	case <-t.C:
		stdout.Close()
		stderr.Close()
		<-readersDone
	}
	t.Stop()
	close(waitDone)
	<-watcherDone
	stopping.Wait()
	if unreaped {
		err = cmd.Wait()
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // exited 0; only a leftover child held stdin
	}
	res.Duration = time.Since(start)
	res.ExitCode = exitCode(err)
	if panicked != nil {
		return res, panicked
	}
	return res, nil
}

// openBridge receives the listener stage one bound, gives it to b.Serve
// and lets the program start. When stage one fails before it sends one,
// it says why on stderr and exits 125: Run then reports that exit, and
// Serve is not called. Only a panic in Serve is returned.
func openBridge(pair *bridgePair, b *muster.Bridge, prog string) *muster.PanicError {
	l, err := pair.receive()
	if err != nil {
		return nil
	}
	pair.closeAfter(l)
	if b.Serve != nil {
		if perr := guard("the bridge handler of "+prog, func() { b.Serve(l) }); perr != nil {
			return perr
		}
	}
	_ = pair.proceed()
	return nil
}

// guard runs fn and returns the panic it raised, if any, as a
// *muster.PanicError (nil when fn returned).
func guard(where string, fn func()) (perr *muster.PanicError) {
	defer func() {
		if r := recover(); r != nil {
			perr = &muster.PanicError{Where: where, Value: r, Stack: string(debug.Stack())}
		}
	}()
	fn()
	return nil
}

// resolve returns the absolute path of the program name runs in dir: a
// name with a slash is a path (relative to dir), any other is looked up
// on PATH.
func resolve(name, dir string) (string, error) {
	if !strings.Contains(name, "/") {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", err
		}
		return filepath.Abs(p)
	}
	if !filepath.IsAbs(name) && dir != "" {
		name = filepath.Join(dir, name)
	}
	if _, err := exec.LookPath(name); err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			return "", ee.Err
		}
		return "", err
	}
	return filepath.Abs(name)
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -1
		}
		return ee.ExitCode()
	}
	return -1
}

// stop sends SIGTERM to the family, then SIGKILL after grace unless the
// leader exits first (what it leaves is then Run's to stop).
func (f *family) stop(grace time.Duration, exited <-chan struct{}) {
	f.signal(syscall.SIGTERM)
	t := time.NewTimer(gracePeriod(grace))
	defer t.Stop()
	select {
	case <-exited:
		return
	case <-t.C:
	}
	f.signal(syscall.SIGKILL)
}

func gracePeriod(grace time.Duration) time.Duration {
	if grace <= 0 {
		return 10 * time.Second
	}
	return grace
}

// Alive reports whether a process with pid exists.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

func readLines(r io.Reader, fn func(string), poke func()) {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			poke()
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long) < MaxLine {
				long = append(long, chunk...)
			}
			continue
		}
		if len(chunk) > 0 || len(long) > 0 {
			line := chunk
			if len(long) > 0 {
				line = append(long, chunk...)
				long = long[:0]
			}
			if len(line) > MaxLine {
				line = line[:MaxLine]
			}
			if fn != nil {
				fn(strings.TrimRight(string(line), "\r\n"))
			}
		}
		if err != nil {
			return
		}
	}
}

// Environ returns os.Environ() without credentials (redact.IsSecret: names
// like *_KEY, *_TOKEN, *_SECRET, *_PAT, *_DSN, *PASSWORD*, *PASSWD*,
// *APIKEY*, and values that are URLs with user-info), unless listed in
// allow, and without the executors' key variables (SetKeyVars) whatever
// their names, unless listed in allow.
func Environ(allow ...string) []string {
	var out []string
	keys := keyVars.Load()
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if (redact.IsSecret(name, value) || keys != nil && contains(*keys, name)) && !contains(allow, name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// keyVars are the variables the executors' api_key_env name.
var keyVars atomic.Pointer[[]string]

// SetKeyVars names the variables that hold an executor's API key (every
// executor's api_key_env): Environ leaves them out of every environment
// whose allow list does not name them, whatever they are called. The
// command line sets them once per run, before any invocation starts;
// each executor allows its own key only.
func SetKeyVars(names ...string) {
	cp := append([]string(nil), names...)
	keyVars.Store(&cp)
}

// IsSecretName reports whether an environment variable name looks like it
// holds a credential (redact.IsSecretName).
func IsSecretName(name string) bool { return redact.IsSecretName(name) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
