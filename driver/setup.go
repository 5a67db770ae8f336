package driver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/exchange"
)

// setups is what [setup] left in each clone this run (by worktree
// directory), beside the stamp file a SetupStore keeps across runs.
type setups struct {
	mu sync.Mutex
	m  map[string]setupStamp
}

// setupStamp is, per setup step, the key it ran with (command and
// inputs) and the digest of its outputs after it ran.
type setupStamp map[string]stepStamp

type stepStamp struct {
	Key     string `json:"key"`
	Outputs string `json:"outputs"`
}

// SetupFailure is a setup step that failed in a clone, with its result.
type SetupFailure struct {
	Step   muster.SetupStep
	Result muster.GateResult
}

func (f *SetupFailure) summary() string {
	return fmt.Sprintf("setup %s (%s) failed: %s", f.Step.Name, f.Step.Command, gateSummary(f.Result))
}

// SetupClone brings the clone at dir up to its [setup] steps: each step
// whose key (its command and the content of each input present) or whose
// outputs differ from what it left there runs, in order; the others are
// skipped (a pooled clone with an unchanged lockfile installs nothing).
// ran names the steps that ran; a step that fails stops the others.
func (d *Driver) SetupClone(ctx context.Context, dir string, cfg *muster.Config) (ran []string, fail *SetupFailure, err error) {
	if len(cfg.Setup) == 0 {
		return nil, nil, nil
	}
	runner := d.opts.Setup
	if runner == nil {
		runner = d.opts.Gates
	}
	if runner == nil {
		return nil, nil, nil
	}
	stamp := d.setups.load(d.opts.Workspace, dir)
	for _, st := range cfg.Setup {
		key, err := setupKey(dir, st)
		if err != nil {
			return ran, nil, err
		}
		if old, ok := stamp[st.Name]; ok && old.Key == key && old.Outputs == outputsDigest(dir, st.Outputs) {
			continue
		}
		delete(stamp, st.Name)
		r := runner.Run(ctx, dir, muster.GateSpec{Name: "setup " + st.Name, Command: st.Command}, cfg.Run.GateTimeout)
		if ctx.Err() != nil {
			return ran, nil, ctx.Err()
		}
		ran = append(ran, st.Name)
		if !r.Passed && len(r.Blocked) > 0 {
			// It failed after muster's proxy refused it a host: the
			// network policy's doing, not the project's nor the change's.
			d.setups.store(d.opts.Workspace, dir, stamp)
			return ran, nil, &envError{cause: "environment error: " + muster.BlockedReason("setup "+st.Name, r.Blocked, "[setup]") + "; then run muster resume",
				err: errors.New("setup was refused the network")}
		}
		if !r.Passed {
			d.setups.store(d.opts.Workspace, dir, stamp)
			return ran, &SetupFailure{Step: st, Result: r}, nil
		}
		stamp[st.Name] = stepStamp{Key: key, Outputs: outputsDigest(dir, st.Outputs)}
	}
	d.setups.store(d.opts.Workspace, dir, stamp)
	return ran, nil, nil
}

func (s *setups) load(ws muster.Workspace, dir string) setupStamp {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.m[dir]; ok {
		return st
	}
	st := setupStamp{}
	if ss, ok := ws.(muster.SetupStore); ok {
		if data, err := os.ReadFile(ss.SetupStamp(dir)); err == nil {
			_ = json.Unmarshal(data, &st) // unreadable: set up again
		}
	}
	if s.m == nil {
		s.m = map[string]setupStamp{}
	}
	s.m[dir] = st
	return st
}

func (s *setups) store(ws muster.Workspace, dir string, st setupStamp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[dir] = st
	if ss, ok := ws.(muster.SetupStore); ok {
		data, _ := json.Marshal(st)
		p := ss.SetupStamp(dir)
		tmp := p + ".tmp"
		if os.WriteFile(tmp, data, 0o644) == nil {
			_ = os.Rename(tmp, p) // lost: the next run sets up again
		}
	}
}

// setupKey hashes a step's command and each of its inputs present (path
// and content), in path order.
func setupKey(dir string, st muster.SetupStep) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", st.Command)
	var files []string
	for _, in := range st.Inputs {
		m, err := filepath.Glob(filepath.Join(dir, in))
		if err != nil {
			return "", fmt.Errorf("setup %s: inputs %q: %w", st.Name, in, err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	for i, f := range files {
		if i > 0 && f == files[i-1] {
			continue
		}
		rel, _ := filepath.Rel(dir, f)
		// An agent wrote the clone: a FIFO, a device or a link at an
		// input is hashed as what it is, never opened through
		// (internal/exchange: O_NOFOLLOW|O_NONBLOCK, a regular file).
		fh, err := exchange.Open(dir, rel, -1)
		if errors.Is(err, exchange.ErrNotRegular) {
			fmt.Fprintf(h, "%s\x00irregular\x00", rel)
			continue
		}
		if fh == nil || err != nil {
			continue
		}
		fmt.Fprintf(h, "%s\x00", rel)
		_, err = io.Copy(h, fh)
		fh.Close()
		if err != nil {
			return "", fmt.Errorf("setup %s: read %s: %w", st.Name, rel, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// outputsDigest is the digest of what lies under a step's outputs: each
// entry's path, mode, size, modification time and inode change time
// (caches tools write there as they run, such as node_modules/.cache and
// __pycache__, left out). An output missing, or an agent's edit to it,
// changes it, also one whose modification time the agent put back.
func outputsDigest(dir string, outputs []string) string {
	h := sha256.New()
	for _, o := range outputs {
		root := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(o, "/")))
		_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				fmt.Fprintf(h, "%s\x00missing\x00", p[len(dir):])
				return nil
			}
			if e.IsDir() && (e.Name() == ".cache" || e.Name() == "__pycache__" || e.Name() == ".vite") {
				return filepath.SkipDir
			}
			fi, err := e.Info()
			if err != nil {
				return nil
			}
			fmt.Fprintf(h, "%s\x00%o\x00%d\x00%d\x00%s\x00", p[len(dir):], fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), changeStamp(fi))
			return nil
		})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// setupBase sets up a clone holding a commit of the run (before any
// agent's change): a failure there is an environment error no task can
// fix, naming the command.
func (d *Driver) setupBase(ctx context.Context, dir, where string, cfg *muster.Config) error {
	start := time.Now()
	_, fail, err := d.SetupClone(ctx, dir, cfg)
	if err != nil {
		return err
	}
	if fail != nil {
		return &envError{cause: fmt.Sprintf("environment error: setup %s (%s) failed on %s (exit %d, after %s): %s; fix the command or the project's dependencies, then run muster resume",
			fail.Step.Name, fail.Step.Command, where, fail.Result.ExitCode, time.Since(start).Round(time.Millisecond), strings.TrimSpace(lastLines(fail.Result.Output, 3))),
			err: fmt.Errorf("setup exit status %d", fail.Result.ExitCode)}
	}
	return nil
}

// setupAfterAgent runs the setup steps whose inputs or outputs the
// agent's change touched: feedback and a failure reason when one fails.
func (w *worker) setupAfterAgent(ctx context.Context) (feedback, failed string, err error) {
	if len(w.cfg.Setup) == 0 {
		return "", "", nil
	}
	ran, fail, err := w.d.SetupClone(ctx, w.dir, w.cfg)
	if err != nil || fail == nil {
		if len(ran) > 0 {
			w.send(muster.Event{Type: muster.EvPhase, Phase: "setup", Round: w.round})
		}
		return "", "", err
	}
	return fmt.Sprintf("Setup %q (%s) failed after your change (it passed before it):\n%s", fail.Step.Name, fail.Step.Command, tail(fail.Result.Output, maxFeedback/2)),
		fail.summary(), nil
}

// baseGates runs each plan-wide gate on the run's tip in the baseline
// clone (set up first): a Warning for each that fails there (its later
// failures are triaged against this result), and an environment error
// when setup or a gate cannot run there.
func (d *Driver) baseGates(ctx context.Context) ([]muster.Event, error) {
	cfg := d.state.Config
	if d.opts.Gates == nil || cfg == nil || len(cfg.Gates) == 0 {
		return nil, nil
	}
	tip, err := d.opts.Workspace.Tip(ctx)
	if err != nil {
		return nil, err
	}
	var out []muster.Event
	for _, g := range cfg.Gates {
		r, ok := d.gateAt(ctx, g, tip, cfg)
		for _, hp := range r.Blocked {
			if len(out) < maxBlockedRecords {
				out = append(out, muster.BlockedEvent(hp, "gate "+g.Name+" on the base"))
			}
		}
		if why := d.gc.setupFailure(tip); why != "" {
			return nil, &envError{cause: why, err: errors.New("setup failed on the base")}
		}
		if !ok || r.Passed {
			continue
		}
		if why, _ := gateEnv(g, r, ""); why != "" {
			return out, &envError{cause: strings.Replace(why, "could not run", "could not run on the base commit", 1), err: errors.New("a gate could not run")}
		}
		out = append(out, muster.Event{Type: muster.EvWarning, Gate: g.Name, Message: fmt.Sprintf("gate %s (%s) fails on the base commit before any task: %s; only new failures are charged", g.Name, g.Command, gateSummary(r))})
	}
	return out, nil
}
