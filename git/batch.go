package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Batch is the one long-lived git helper (ARCHITECTURE §8.4): a `git
// cat-file --batch-command --buffer` process per object store that
// answers object reads (info, contents, rev resolution) without a git
// process per question. It is safe for concurrent use (requests are
// serialised on the one process, which git answers in microseconds),
// started on first use, restarted when it dies, and stopped by Close.
// Objects are immutable, so a long-lived reader cannot go stale on
// them; names that move (refs) are resolved afresh at every request, but
// the run branch is read by Workspace.Tip, never through a Batch.
type Batch struct {
	base cmd // where and how git runs (dir, own, pre); args are set here

	mu     sync.Mutex
	p      *batchProc
	closed bool
	starts int           // processes started (tests, benchmarks)
	cpu    time.Duration // CPU time of the processes that ended
}

// batchProc is one running cat-file process.
type batchProc struct {
	x      *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *capped
	dead   bool
}

// ObjectInfo is what git knows of an object without reading it.
type ObjectInfo struct {
	OID  string
	Type string // blob, tree, commit, tag
	Size int64
}

// MissingError is an object name git could not resolve (or resolved
// ambiguously).
type MissingError struct {
	Name   string
	Reason string // "missing" or "ambiguous"
}

func (e *MissingError) Error() string { return fmt.Sprintf("git object %q: %s", e.Name, e.Reason) }

// ErrBatchClosed is returned by a Batch used after Close.
var ErrBatchClosed = errors.New("git batch helper closed")

// NewBatch returns the helper for the repository (or bare git directory)
// at dir, with the user's git configuration as any call there has it.
// A Workspace has its own for the run's object store (Workspace.Batch).
func NewBatch(dir string) *Batch { return newBatch(cmd{dir: dir}) }

// newBatch returns the helper running as c does (its dir, env, own and
// pre; its args are replaced).
func newBatch(c cmd) *Batch {
	c.readOnly = true
	c.args = nil
	return &Batch{base: c}
}

// Info returns the object info of name (any revision git understands,
// e.g. "HEAD", "<commit>^{tree}", "<tree>:path").
func (b *Batch) Info(ctx context.Context, name string) (ObjectInfo, error) {
	infos, _, err := b.do(ctx, "info", []string{name})
	if err != nil {
		return ObjectInfo{}, err
	}
	return infos[0], nil
}

// InfoMany returns the object info of every name, in order, in one
// round trip. A name git cannot resolve has an ObjectInfo with an empty
// OID and its Type set to the reason ("missing", "ambiguous").
func (b *Batch) InfoMany(ctx context.Context, names []string) ([]ObjectInfo, error) {
	if len(names) == 0 {
		return nil, nil
	}
	infos, _, err := b.doMany(ctx, "info", names)
	return infos, err
}

// Contents returns the object info and contents of name.
func (b *Batch) Contents(ctx context.Context, name string) (ObjectInfo, []byte, error) {
	infos, data, err := b.do(ctx, "contents", []string{name})
	if err != nil {
		return ObjectInfo{}, nil, err
	}
	return infos[0], data[0], nil
}

// Resolve returns the object id name names.
func (b *Batch) Resolve(ctx context.Context, name string) (string, error) {
	i, err := b.Info(ctx, name)
	return i.OID, err
}

// Close stops the process. A closed Batch refuses further requests.
func (b *Batch) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.stop()
	return nil
}

// Stats reports how many processes were started and the CPU time (user
// and system) of those that ended.
func (b *Batch) Stats() (starts int, cpu time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.starts, b.cpu
}

// do is doMany for one name, turning a missing object into an error.
func (b *Batch) do(ctx context.Context, verb string, names []string) ([]ObjectInfo, [][]byte, error) {
	infos, data, err := b.doMany(ctx, verb, names)
	if err != nil {
		return nil, nil, err
	}
	if infos[0].OID == "" {
		return nil, nil, &MissingError{Name: names[0], Reason: infos[0].Type}
	}
	return infos, data, nil
}

// doMany sends one command per name and reads the answers. A process
// that died (before or during the request) is restarted and the request
// sent once more: reads have no side effects.
func (b *Batch) doMany(ctx context.Context, verb string, names []string) ([]ObjectInfo, [][]byte, error) {
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, "\n\x00") {
			return nil, nil, fmt.Errorf("git batch: bad object name %q", n)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, nil, ErrBatchClosed
	}
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if b.p == nil || b.p.dead {
			b.stop()
			if err := b.start(); err != nil {
				return nil, nil, err
			}
		}
		infos, data, err := b.roundTrip(ctx, verb, names)
		if err == nil {
			return infos, data, nil
		}
		b.p.dead = true
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("git cat-file: %w", context.Cause(ctx))
		}
		lastErr = err
	}
	return nil, nil, lastErr
}

// roundTrip writes the commands and a flush, then reads one answer per
// name. A cancelled ctx kills the process, which ends the read.
func (b *Batch) roundTrip(ctx context.Context, verb string, names []string) ([]ObjectInfo, [][]byte, error) {
	p := b.p
	stop := context.AfterFunc(ctx, func() { _ = p.x.Process.Kill() })
	defer stop()
	var req bytes.Buffer
	for _, n := range names {
		req.WriteString(verb + " " + n + "\n")
	}
	req.WriteString("flush\n")
	if _, err := p.in.Write(req.Bytes()); err != nil {
		return nil, nil, b.procErr(err)
	}
	infos := make([]ObjectInfo, len(names))
	data := make([][]byte, len(names))
	for i := range names {
		hdr, err := p.out.ReadString('\n')
		if err != nil {
			return nil, nil, b.procErr(err)
		}
		info, ok, err := parseBatchHeader(strings.TrimSuffix(hdr, "\n"), names[i])
		if err != nil {
			return nil, nil, err
		}
		infos[i] = info
		if !ok || verb != "contents" {
			continue
		}
		buf := make([]byte, info.Size+1) // the contents and a newline
		if _, err := io.ReadFull(p.out, buf); err != nil {
			return nil, nil, b.procErr(err)
		}
		data[i] = buf[:info.Size]
	}
	return infos, data, nil
}

// parseBatchHeader reads "<oid> <type> <size>", or "<name> missing" /
// "<name> ambiguous" (ok false).
func parseBatchHeader(hdr, name string) (ObjectInfo, bool, error) {
	for _, r := range []string{"missing", "ambiguous"} {
		if hdr == name+" "+r {
			return ObjectInfo{Type: r}, false, nil
		}
	}
	f := strings.Fields(hdr)
	if len(f) != 3 {
		return ObjectInfo{}, false, fmt.Errorf("git cat-file: unexpected answer %q for %q", hdr, name)
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 {
		return ObjectInfo{}, false, fmt.Errorf("git cat-file: unexpected size in %q", hdr)
	}
	return ObjectInfo{OID: f[0], Type: f[1], Size: size}, true, nil
}

// procErr describes a failed read or write with what git printed.
func (b *Batch) procErr(err error) error {
	msg := strings.TrimSpace(b.p.stderr.String())
	if msg != "" {
		return fmt.Errorf("git cat-file --batch-command: %w: %s", err, msg)
	}
	return fmt.Errorf("git cat-file --batch-command: %w", err)
}

// start starts a process. The caller holds mu.
func (b *Batch) start() error {
	c := b.base
	c.args = []string{"cat-file", "--batch-command", "--buffer"}
	x := exec.Command("git", c.gitArgs()...)
	x.Dir = c.dir
	x.Env = append([]string(nil), baseEnv()...)
	if c.own {
		x.Env = append(x.Env, ownEnv...)
	}
	x.Env = append(x.Env, c.env...)
	in, err := x.StdinPipe()
	if err != nil {
		return err
	}
	out, err := x.StdoutPipe()
	if err != nil {
		return err
	}
	stderr := &capped{max: 8 << 10}
	x.Stderr = stderr
	if err := x.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return ErrNoGit
		}
		return fmt.Errorf("start git cat-file: %w", err)
	}
	b.p = &batchProc{x: x, in: in, out: bufio.NewReaderSize(out, 64<<10), stderr: stderr}
	b.starts++
	return nil
}

// stop ends the process, if any, and collects its CPU time. The caller
// holds mu.
func (b *Batch) stop() {
	if b.p == nil {
		return
	}
	p := b.p
	b.p = nil
	_ = p.in.Close() // EOF on stdin: cat-file exits
	done := make(chan struct{})
	go func() {
		_ = p.x.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		_ = p.x.Process.Kill()
		<-done
	}
	if st := p.x.ProcessState; st != nil {
		b.cpu += st.UserTime() + st.SystemTime()
	}
}

// capped is a writer that keeps at most max bytes.
type capped struct {
	mu  sync.Mutex
	b   bytes.Buffer
	max int
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.b.Len(); room > 0 {
		if len(p) > room {
			c.b.Write(p[:room])
		} else {
			c.b.Write(p)
		}
	}
	return len(p), nil
}

// pid returns the running process's id, or 0 (tests).
func (b *Batch) pid() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.p == nil || b.p.dead {
		return 0
	}
	return b.p.x.Process.Pid
}
