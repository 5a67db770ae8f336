package usagelog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/cost"
)

// Defaults for Options.
const (
	DefaultChunkSize = 32 << 20 // files larger than this are split into byte ranges
	DefaultMaxLine   = 64 << 20 // longer lines are skipped and counted
	readSize         = 1 << 20
)

// Options control a scan.
type Options struct {
	// Dir is the agent's home (the folder holding projects/ or
	// sessions/); empty means the default (DefaultClaudeDirs,
	// DefaultCodexDir). For Claude it may list several folders separated
	// by commas.
	Dir string
	// Extra are more agent homes to read besides Dir (muster's runs:
	// each attempt's agent home in the repository's run directories);
	// one that holds no log folder is skipped, and with Extra a missing
	// default Dir is no error.
	Extra []string
	// Prices prices entries the agent did not price; nil means
	// cost.Default().
	Prices *cost.Table
	// Workers is the number of parallel readers; 0 means GOMAXPROCS.
	Workers int
	// ChunkSize splits big files into byte ranges read in parallel; 0
	// means DefaultChunkSize.
	ChunkSize int64
	// MaxLine is the longest line read; 0 means DefaultMaxLine. Longer
	// lines are skipped (Stats.Skipped[SkipOverlong]).
	MaxLine int
}

// homeFiles lists the files ending in suffix under each dir's logs
// folder (dirs: the agent's homes; explicit when given by the user) and
// under each of extra's, which are skipped when they hold none; a
// missing default home is skipped too when extra is not empty.
func homeFiles(dirs []string, explicit bool, extra []string, logs, suffix string) ([]string, []int64, error) {
	var paths []string
	var sizes []int64
	for _, d := range dirs {
		root := logRoot(strings.TrimSpace(d), logs, explicit)
		p, s, err := listFiles(root, suffix)
		if err != nil {
			if !explicit && len(extra) > 0 && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, nil, dirError(root, err)
		}
		paths, sizes = append(paths, p...), append(sizes, s...)
	}
	for _, d := range extra {
		if p, s, err := listFiles(filepath.Join(d, logs), suffix); err == nil {
			paths, sizes = append(paths, p...), append(sizes, s...)
		}
	}
	return paths, sizes, nil
}

// withDefaults returns o with each zero field at its default.
func (o Options) withDefaults() Options {
	if o.Prices == nil {
		o.Prices = cost.Default()
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = DefaultChunkSize
	}
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	return o
}

// newResult is the result of a scan of files of sizes, before any entry.
func newResult(source string, prices *cost.Table, sizes []int64) *Result {
	res := &Result{Source: source, PricesDate: prices.Date()}
	res.Stats.Files = len(sizes)
	for _, s := range sizes {
		res.Stats.Bytes += s
	}
	return res
}

// jobOut is what one job of a scan read.
type jobOut struct {
	entries []Entry
	stats   Stats
	err     error
}

// Entry is one usage record after de-duplication.
type Entry struct {
	// Time is when the record was written, Unix milliseconds.
	Time int64
	// Model is the model name as logged ("" when absent); fast-mode
	// requests get a "-fast" suffix.
	Model string
	// Session is the agent session (Claude sessionId, else the file
	// name; Codex: the rollout's file name).
	Session string
	// Tokens and cost (CostMicros is CostNanos rounded).
	muster.Usage
	// CostNanos is the cost in nano-dollars: the agent's costUSD when
	// logged, else estimated from the price table (Estimated set).
	CostNanos int64
	// Unpriced marks an estimate for a model the table does not know.
	Unpriced bool

	sidechain bool
	hasKey    bool
	key       uint64 // exact de-duplication key
	replayKey uint64 // (message id, session): sub-agent replays
}

// Stats count what a scan read and skipped.
type Stats struct {
	Files      int   `json:"files"`
	Bytes      int64 `json:"bytes"`
	Lines      int64 `json:"lines"`
	Records    int64 `json:"records"` // usage records read, before de-duplication
	Entries    int64 `json:"entries"` // after de-duplication
	Unreadable int   `json:"unreadable_files"`
	// Skipped counts skipped lines by reason (Skip* constants).
	Skipped map[string]int64 `json:"skipped"`
}

func (s *Stats) skip(reason string, n int64) {
	if n == 0 {
		return
	}
	if s.Skipped == nil {
		s.Skipped = map[string]int64{}
	}
	s.Skipped[reason] += n
}

func (s *Stats) add(o *Stats) {
	s.Lines += o.Lines
	s.Records += o.Records
	for k, v := range o.Skipped {
		s.skip(k, v)
	}
}

// Result is the outcome of a scan.
type Result struct {
	// Source is "claude" or "codex".
	Source  string
	Entries []Entry
	Stats   Stats
	// PricesDate is the date of the prices used for estimates.
	PricesDate string
}

// job is one byte range of one file.
type job struct {
	file       int
	path       string
	start, end int64 // [start, end): lines that start in the range
}

// lineFunc handles one complete line (without the newline).
type lineFunc func(line []byte)

// forEachLine reads the lines that start in [start, end) of path with a
// bounded buffer (it grows up to maxLine for long lines). Longer lines
// are skipped and counted as SkipOverlong.
func forEachLine(path string, start, end int64, maxLine int, bufp *[]byte, st *Stats, fn lineFunc) error {
	f, err := openRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	pos := start
	discard := false // drop the partial line at the front of buf
	if start > 0 {
		// The line holding byte start-1 belongs to the previous range.
		pos = start - 1
		discard = true
	}
	if _, err := f.Seek(pos, io.SeekStart); err != nil {
		return err
	}
	if len(*bufp) == 0 {
		*bufp = make([]byte, min(readSize, maxLine))
	}
	buf := *bufp
	defer func() {
		if len(buf) <= 4*readSize {
			*bufp = buf // keep grown buffers of moderate size for the next job
		}
	}()
	n := 0        // bytes in buf
	bufOff := pos // file offset of buf[0]
	for {
		m, rerr := f.Read(buf[n:])
		n += m
		eof := rerr == io.EOF
		if rerr != nil && !eof {
			return rerr
		}
		data := buf[:n]
		consumed := 0
		for {
			i := bytes.IndexByte(data[consumed:], '\n')
			if i < 0 {
				break
			}
			line := data[consumed : consumed+i]
			off := bufOff + int64(consumed)
			consumed += i + 1
			if discard {
				discard = false
				continue
			}
			if off >= end {
				return nil
			}
			st.Lines++
			fn(line)
		}
		if eof || (m == 0 && n < len(buf)) {
			if consumed < n && !discard && bufOff+int64(consumed) < end {
				st.Lines++
				fn(data[consumed:]) // last line without a newline
			}
			return nil
		}
		if consumed == 0 && n == len(buf) {
			// A full buffer and no newline: grow, or skip the line.
			if len(buf) < maxLine && !discard {
				nb := make([]byte, min(len(buf)*2, maxLine))
				copy(nb, buf[:n])
				buf = nb
				continue
			}
			if !discard {
				if bufOff >= end {
					return nil
				}
				st.Lines++
				st.skip(SkipOverlong, 1)
				discard = true
			}
			bufOff += int64(n)
			n = 0
			continue
		}
		copy(buf, data[consumed:])
		n -= consumed
		bufOff += int64(consumed)
	}
}

// openRegular opens path for reading only when it is a regular file:
// never through a link at its name, never waiting on a FIFO. The logs of
// muster's runs lie in homes agents wrote, and a process one left behind
// may swap a listed file for either before it is opened.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open %s: not a regular file", path)
	}
	return f, nil
}

// listFiles returns the files under root (recursively) whose names end in
// suffix, sorted, with sizes.
func listFiles(root, suffix string) ([]string, []int64, error) {
	var paths []string
	var sizes []int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // unreadable sub-folder: skip
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), suffix) {
			return nil
		}
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		paths = append(paths, p)
		sizes = append(sizes, info.Size())
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	idx := make([]int, len(paths))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return paths[idx[a]] < paths[idx[b]] })
	ps := make([]string, len(paths))
	ss := make([]int64, len(paths))
	for i, j := range idx {
		ps[i], ss[i] = paths[j], sizes[j]
	}
	return ps, ss, nil
}

// splitJobs cuts files into jobs of at most chunk bytes, in file order.
func splitJobs(paths []string, sizes []int64, chunk int64) []job {
	var jobs []job
	for i, p := range paths {
		// Lines that start at or after the listed size were appended
		// since (a live session): left for the next scan.
		for s := int64(0); s == 0 || s < sizes[i]; s += chunk {
			jobs = append(jobs, job{file: i, path: p, start: s, end: min(s+chunk, sizes[i])})
		}
	}
	return jobs
}

// runJobs runs work over jobs on workers goroutines and hands each
// result to merge in job order, on the calling goroutine, as soon as all
// earlier jobs are merged (so results do not pile up). The worker
// goroutines live until the job channel is drained; runJobs waits for
// them before it returns.
func runJobs[T any](ctx context.Context, jobs []job, workers int, work func(worker int, j job) T, merge func(i int, r T)) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	type done struct {
		i int
		r T
	}
	next := make(chan int)
	results := make(chan done, workers)
	var wg sync.WaitGroup
	for w := range min(workers, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results <- done{i, work(w, jobs[i])}
			}
		}()
	}
	// Feed jobs in order; a separate goroutine, so that merging below
	// never blocks a worker. It ends when every job is handed out or ctx
	// is done.
	var err error
	go func() {
		defer close(next)
		for i := range jobs {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()
	pending := map[int]T{}
	want := 0
	for d := range results {
		pending[d.i] = d.r
		for {
			r, ok := pending[want]
			if !ok {
				break
			}
			delete(pending, want)
			merge(want, r)
			want++
		}
	}
	if want < len(jobs) {
		err = context.Cause(ctx)
		if err == nil {
			err = errors.New("scan stopped early")
		}
	}
	return err
}

// logRoot is dir/sub; for a folder the user named (explicit) that has
// no sub folder, the folder itself, so --dir may name the projects or
// sessions folder directly.
func logRoot(dir, sub string, explicit bool) string {
	root := filepath.Join(dir, sub)
	if !explicit {
		return root
	}
	if _, err := os.Stat(root); err != nil {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir
		}
	}
	return root
}

// dirError turns a failure to read the log folder into a muster error.
func dirError(dir string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("log folder %s does not exist", dir), Err: err}
	}
	return &muster.Error{Code: muster.CodeInternal, Op: "read " + dir, Err: err}
}

// DefaultClaudeDirs are the folders Claude Code logs to: the
// comma-separated $CLAUDE_CONFIG_DIR, else those of ~/.config/claude and
// ~/.claude that hold a projects folder (else ~/.claude).
func DefaultClaudeDirs() []string {
	if v := os.Getenv("CLAUDE_CONFIG_DIR"); v != "" {
		var dirs []string
		for _, d := range strings.Split(v, ",") {
			if d = strings.TrimSpace(d); d != "" {
				dirs = append(dirs, d)
			}
		}
		if len(dirs) > 0 {
			return dirs
		}
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return []string{".claude"}
	}
	var dirs []string
	for _, d := range []string{filepath.Join(h, ".config", "claude"), filepath.Join(h, ".claude")} {
		if st, err := os.Stat(filepath.Join(d, "projects")); err == nil && st.IsDir() {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		dirs = []string{filepath.Join(h, ".claude")}
	}
	return dirs
}

// DefaultCodexDir is $CODEX_HOME, else ~/.codex.
func DefaultCodexDir() string {
	if v := os.Getenv("CODEX_HOME"); v != "" {
		return v
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return ".codex"
	}
	return filepath.Join(h, ".codex")
}
