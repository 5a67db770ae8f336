// Package sim is a simulated agent for the demo, dry runs and benchmarks.
// It waits, edits files and reports token usage, all deterministic from
// the executor's seed and the task, without any model or network.
//
// A task's prompt may steer it with lines that start with "sim:":
//
//	sim: sleep 2s                      how long the agent "works" (default: 1-3 s from the seed)
//	sim: tokens 12000 in, 1500 out     usage to report (default: from the prompt's size)
//	sim: skip PATH on round 0          leave PATH out on that round (a gate can catch it)
//	sim: review major "TITLE" on round 0   as a reviewer, report that finding on that round
//	sim: fail                          exit with an error
//	sim: satisfied                     change nothing and say the task already holds
//
// Fenced blocks whose info string is "file:PATH" are written to PATH;
// "file:PATH round=N" gives the content from fix round N on. Without any
// block, the sim writes a line into each file the task owns (or into
// sim/<task>.txt).
package sim

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/muster-run/muster"
)

// Model is the model name the sim reports.
const Model = "sim-1"

// Prices the sim charges, in micro-dollars per million tokens.
const (
	inputPerM  = 3_000_000
	outputPerM = 15_000_000
)

// Executor is the simulated agent.
type Executor struct {
	spec *muster.ExecutorSpec
}

// New returns a sim executor for spec (kind "sim"). spec.Speed scales
// the delays (default 1; 0.01 makes a run nearly instant).
func New(spec *muster.ExecutorSpec) (*Executor, error) {
	return &Executor{spec: spec}, nil
}

type directives struct {
	sleep     time.Duration
	in, out   int64
	skip      map[int][]string
	review    map[int][]muster.Finding
	fail      bool
	satisfied bool
	files     map[string][]block
	fileOrder []string
	hasSleep  bool
	hasTokens bool
}

var (
	reTokens = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^tokens\s+(\d+)\s+in,\s*(\d+)\s+out$`) })
	reSkip   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^skip\s+(\S+)\s+on round\s+(\d+)$`) })
	reReview = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^review\s+(critical|major|minor)\s+"([^"]*)"\s+on round\s+(\d+)$`)
	})
)

func parse(prompt string) directives {
	d := directives{skip: map[int][]string{}, review: map[int][]muster.Finding{}, files: map[string][]block{}}
	lines := strings.Split(prompt, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if rest, ok := strings.CutPrefix(line, "```file:"); ok {
			fields := strings.Fields(rest)
			if len(fields) == 0 {
				continue
			}
			p, from := fields[0], 0
			if len(fields) > 1 {
				if v, ok := strings.CutPrefix(fields[1], "round="); ok {
					from, _ = strconv.Atoi(v)
				}
			}
			var body []string
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				body = append(body, lines[i])
			}
			if _, seen := d.files[p]; !seen {
				d.fileOrder = append(d.fileOrder, p)
			}
			d.files[p] = append(d.files[p], block{from: from, text: strings.Join(body, "\n") + "\n"})
			continue
		}
		rest, ok := strings.CutPrefix(line, "sim:")
		if !ok {
			continue
		}
		rest = strings.TrimSpace(rest)
		switch {
		case strings.HasPrefix(rest, "sleep "):
			if v, err := time.ParseDuration(strings.TrimSpace(rest[6:])); err == nil {
				d.sleep, d.hasSleep = v, true
			}
		case reTokens().MatchString(rest):
			m := reTokens().FindStringSubmatch(rest)
			d.in, _ = strconv.ParseInt(m[1], 10, 64)
			d.out, _ = strconv.ParseInt(m[2], 10, 64)
			d.hasTokens = true
		case reSkip().MatchString(rest):
			m := reSkip().FindStringSubmatch(rest)
			r, _ := strconv.Atoi(m[2])
			d.skip[r] = append(d.skip[r], m[1])
		case reReview().MatchString(rest):
			m := reReview().FindStringSubmatch(rest)
			r, _ := strconv.Atoi(m[3])
			d.review[r] = append(d.review[r], muster.Finding{Severity: m[1], Title: m[2], Detail: "found by the simulated reviewer"})
		case rest == "fail":
			d.fail = true
		case rest == "satisfied":
			d.satisfied = true
		}
	}
	return d
}

func (e *Executor) hash(parts ...string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|", e.spec.Seed)
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// Execute simulates one invocation.
func (e *Executor) Execute(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
	d := parse(req.Task.Prompt)
	h := e.hash(string(req.Task.ID), string(req.Role), strconv.Itoa(req.Round), strconv.Itoa(req.Attempt))
	if done, res, err := e.work(ctx, req, d, h, emit); done {
		return res, err
	}
	in, out := d.in, d.out
	if !d.hasTokens {
		in = int64(len(req.Prompt)/4) + int64(2000+h%6000)
		out = int64(300 + (h>>16)%1500)
	}
	if req.Role == muster.RoleReviewer {
		out /= 3
	}
	cost := (in*inputPerM + out*outputPerM) / 1_000_000
	emit(muster.Record{Type: muster.RecUsage, Model: Model, Usage: muster.Usage{InputTokens: in, OutputTokens: out, CostMicros: cost}})
	if d.fail {
		emit(muster.Record{Type: muster.RecMessage, Text: "simulated failure"})
		return &muster.ExecResult{ExitCode: 1, Tail: "simulated failure"}, &muster.AgentError{Class: muster.FailExit, ExitCode: 1, Message: "exit status 1"}
	}
	if req.Role == muster.RoleReviewer {
		f := d.review[req.Round]
		emit(muster.Record{Type: muster.RecFindings, Findings: f})
		emit(muster.Record{Type: muster.RecMessage, Text: fmt.Sprintf("reviewed %s: %d findings", req.Task.ID, len(f))})
		return &muster.ExecResult{Reviewed: true, Findings: f}, nil
	}
	if d.satisfied {
		emit(muster.Record{Type: muster.RecSatisfied})
		return &muster.ExecResult{Satisfied: true}, nil
	}
	return edit(req, d, emit)
}

// work spends the simulated time in a few steps, so the live view sees
// tools arrive; done with the result when the context ends or the task's
// timeout comes first.
func (e *Executor) work(ctx context.Context, req *muster.ExecRequest, d directives, h uint64, emit func(muster.Record)) (bool, *muster.ExecResult, error) {
	work := d.sleep
	if !d.hasSleep {
		work = time.Duration(1000+h%2000) * time.Millisecond
	}
	if req.Role == muster.RoleReviewer && !d.hasSleep {
		work /= 3
	}
	speed := e.spec.Speed
	if speed == 0 {
		speed = 1
	}
	work = time.Duration(float64(work) * speed)
	if req.Timeout > 0 && work > req.Timeout {
		select {
		case <-ctx.Done():
			return true, nil, context.Cause(ctx)
		case <-time.After(req.Timeout):
		}
		return true, &muster.ExecResult{ExitCode: -1}, &muster.AgentError{Class: muster.FailTimeout, Message: "timed out after " + req.Timeout.String()}
	}
	steps := 3
	for i := 0; i < steps; i++ {
		select {
		case <-ctx.Done():
			return true, nil, context.Cause(ctx)
		case <-time.After(work / time.Duration(steps)):
		}
		if i == 0 {
			emit(muster.Record{Type: muster.RecTool, Tool: "Read", Args: firstOwned(req.Task)})
		}
	}
	return false, nil, nil
}

// edit writes the coder's change: the prompt's files for this round, or
// a line appended to each owned target.
func edit(req *muster.ExecRequest, d directives, emit func(muster.Record)) (*muster.ExecResult, error) {
	skip := map[string]bool{}
	for _, p := range d.skip[req.Round] {
		skip[p] = true
	}
	written := 0
	write := func(p, content string, appendTo bool) error {
		if skip[p] {
			return nil
		}
		if err := writeIn(req.Dir, p, content, appendTo); err != nil {
			return err
		}
		written++
		emit(muster.Record{Type: muster.RecTool, Tool: "Edit", Args: p})
		return nil
	}
	var err error
	if len(d.fileOrder) > 0 {
		for _, p := range d.fileOrder {
			text, ok := pick(d.files[p], req.Round)
			if !ok {
				continue
			}
			if err = write(p, text, false); err != nil {
				break
			}
		}
	} else {
		for _, p := range targets(req.Task) {
			line := fmt.Sprintf("%s: %s (round %d)\n", req.Task.ID, req.Task.Title, req.Round)
			if err = write(p, line, true); err != nil {
				break
			}
		}
	}
	if err != nil {
		return &muster.ExecResult{ExitCode: 1}, &muster.AgentError{Class: muster.FailExit, ExitCode: 1, Message: err.Error()}
	}
	emit(muster.Record{Type: muster.RecMessage, Text: fmt.Sprintf("edited %d files for %s", written, req.Task.ID)})
	return &muster.ExecResult{}, nil
}

// writeIn writes (or appends) content to p in the worktree dir. The
// simulated agent runs inside muster: it writes through an os.Root on the
// worktree, so no link there leads it outside.
func writeIn(dir, p, content string, appendTo bool) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	rel := filepath.FromSlash(p)
	if d := filepath.Dir(rel); d != "." {
		if err := r.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	flag := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendTo {
		flag = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := r.OpenFile(rel, flag|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(content)
	return err
}

// block is a file's content from a round on.
type block struct {
	from int
	text string
}

// pick returns the content of the block with the highest start round not
// after round.
func pick(bs []block, round int) (string, bool) {
	best := -1
	for i, b := range bs {
		if b.from <= round && (best < 0 || b.from >= bs[best].from) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	return bs[best].text, true
}

func firstOwned(t *muster.Task) string {
	if len(t.Owns) > 0 {
		return t.Owns[0]
	}
	return "."
}

// targets picks files to edit inside the task's Owns.
func targets(t *muster.Task) []string {
	if len(t.Owns) == 0 {
		return []string{"sim/" + string(t.ID) + ".txt"}
	}
	var out []string
	for _, o := range t.Owns {
		switch {
		case strings.HasSuffix(o, "/"):
			out = append(out, o+string(t.ID)+".txt")
		case strings.ContainsAny(o, "*?[{"):
			dir := o
			if i := strings.IndexAny(o, "*?[{"); i >= 0 {
				dir = path.Dir(o[:i+1])
			}
			name := string(t.ID) + ".txt"
			if ext := path.Ext(o); ext != "" && !strings.ContainsAny(ext, "*?[{") {
				name = string(t.ID) + ext
			}
			if dir == "." {
				out = append(out, name)
			} else {
				out = append(out, dir+"/"+name)
			}
		default:
			out = append(out, o)
		}
	}
	return out
}

// ScratchFree says the executor needs no scratch directory.
func (e *Executor) ScratchFree() {}
