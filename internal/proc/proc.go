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
	// Limit names the limit of Confine the invocation reached:
	// "max_memory" (the kernel killed a process of it at MaxMemory),
	// "max_pids" (a fork was refused at MaxPids), or "".
	Limit string
}

// LimitReason says, for people, that the invocation reached its limit
// ("" when it did not).
func (r Result) LimitReason(c *muster.Confinement) string {
	switch {
	case r.Limit == "max_memory" && c != nil:
		return fmt.Sprintf("reached [run] max_memory (%d bytes): the kernel killed a process of it", c.MaxMemory)
	case r.Limit == "max_pids" && c != nil:
		return fmt.Sprintf("reached [run] max_pids (%d processes): a fork was refused", c.MaxPids)
	case r.Limit != "":
		return "reached [run] " + r.Limit
	}
	return ""
}

// Run starts the process and waits for it. It returns an error only when
// the process could not start, or a *muster.PanicError when one of the
// handlers (OnStart, OnLine, OnStderr) panicked (the process group is
// then stopped, as on cancellation); a non-zero exit is in Result. When ctx is
// cancelled, or Timeout or Stall elapse, the process group gets SIGTERM,
// then SIGKILL after Grace.
func Run(ctx context.Context, s Spec) (Result, error) {
	r, res, err := launch(s)
	if r == nil {
		return res, err
	}
	defer r.release()
	r.read()
	go r.watch(ctx)
	return r.finish()
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

// lineReaders are the 64 KiB readers of readLines, reused: two an
// invocation were a measurable share of muster's allocation per task.
var lineReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

func readLines(r io.Reader, fn func(string), poke func()) {
	br := lineReaders.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() { br.Reset(nil); lineReaders.Put(br) }()
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
