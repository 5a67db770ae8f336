package cmdutil

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/journal"
)

// Repo is a repository muster works in.
type Repo struct {
	Top    string // the work tree's top directory
	GitDir string // the common git directory
}

// OpenRepo finds the repository containing dir.
func OpenRepo(ctx context.Context, dir string) (*Repo, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, Env("%w", err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return nil, Env("%s: not a directory", dir)
	}
	top, gitDir, err := git.Root(ctx, abs)
	if err != nil {
		if errors.Is(err, git.ErrNoGit) {
			return nil, Env("git is not installed (muster needs the git command)")
		}
		if ctx.Err() != nil {
			// A signal cut git short: say so, not that this is no repository.
			return nil, Env("open the repository at %s: %w", abs, context.Cause(ctx))
		}
		if bare := bareRepo(abs); bare != "" {
			return nil, Env("%s is a bare git repository, which has no work tree for muster to start from: clone it (git clone %s) and run muster in the clone", bare, bare)
		}
		return nil, Env("%s is not inside a git repository: run muster from a repository, or pass --repo DIR", abs)
	}
	return &Repo{Top: top, GitDir: gitDir}, nil
}

// RunsDir is where the repository's runs live.
func (r *Repo) RunsDir() string { return filepath.Join(r.GitDir, "muster", "runs") }

// RunDir is one run's directory.
func (r *Repo) RunDir(id string) string { return filepath.Join(r.RunsDir(), id) }

// JournalPath is one run's journal.
func (r *Repo) JournalPath(id string) string { return filepath.Join(r.RunDir(id), journal.FileName) }

// RunInfo describes a run from its journal's first event.
type RunInfo struct {
	ID      string
	Started time.Time
	Plan    string
	Dir     string
	// Kind is muster.RunKindPlan for a plan session (muster plan), empty
	// for a run.
	Kind string
}

// Runs lists the repository's runs, most recently started first.
func (r *Repo) Runs() ([]RunInfo, error) {
	entries, err := os.ReadDir(r.RunsDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, Env("list runs: %w", err)
	}
	var out []RunInfo
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		jpath := r.JournalPath(e.Name())
		first, err := firstEvent(jpath)
		if err != nil || first.Type != muster.EvRunStarted {
			// A journal that is there but cannot be read is still a run
			// (started when the file was last written): commands that
			// pick it fail on it (exit 3) rather than pass over it.
			st, serr := os.Stat(jpath)
			if serr != nil || st.Size() == 0 {
				continue
			}
			out = append(out, RunInfo{ID: e.Name(), Started: st.ModTime(), Dir: r.RunDir(e.Name())})
			continue
		}
		out = append(out, RunInfo{ID: e.Name(), Started: first.Time, Plan: first.Plan, Dir: r.RunDir(e.Name()), Kind: first.Kind})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.After(out[j].Started)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

func firstEvent(path string) (muster.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return muster.Event{}, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return muster.Event{}, err
	}
	var e muster.Event
	err = json.Unmarshal(line, &e)
	return e, err
}

// ResolveRun returns the run named id, or the latest run when id is empty.
// Plan sessions (muster plan) are never the latest run; named, they
// resolve like runs.
func (r *Repo) ResolveRun(id string) (string, error) {
	if id != "" {
		if !muster.IDPattern().MatchString(id) {
			return "", Invalid("run %q: a run ID is letters, digits, '.', '_' and '-' (see muster runs)", id)
		}
		if _, err := os.Stat(r.JournalPath(id)); err != nil {
			if dirExists(r.RunDir(id)) {
				// The run is there, its journal is not (or cannot be
				// reached): the environment's fault, not the name's.
				return "", Env("run %s: its journal cannot be read: %w", id, err)
			}
			return "", Invalid("no run %q in %s (see muster runs)", id, r.Top)
		}
		return id, nil
	}
	runs, err := r.Runs()
	if err != nil {
		return "", err
	}
	for _, run := range runs {
		if run.Kind != muster.RunKindPlan {
			return run.ID, nil
		}
	}
	return "", Invalid("no runs in %s yet: start one with muster run PLAN", r.Top)
}

// IsPlanSession reports whether the run id is a plan session.
func (r *Repo) IsPlanSession(id string) bool {
	first, err := firstEvent(r.JournalPath(id))
	return err == nil && first.Kind == muster.RunKindPlan
}

// ReadRun reads a run's journal without locking it.
func (r *Repo) ReadRun(id string) ([]muster.Event, error) {
	evs, err := journal.ReadFile(r.JournalPath(id))
	if err != nil {
		return nil, Env("read journal of run %s: %w", id, err)
	}
	if len(evs) == 0 || evs[0].Type != muster.EvRunStarted {
		return nil, Env("journal of run %s is empty or does not start with RunStarted", id)
	}
	return evs, nil
}

// NewRunID returns a fresh run ID: the date and six random hex digits.
func NewRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%s", now.UTC().Format("20060102"), hex.EncodeToString(b[:]))
}

// bareRepo returns the bare repository dir is in (dir or a parent with
// HEAD, objects/, refs/ and "bare = true" in its config), or "".
func bareRepo(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		cfg, err := os.ReadFile(filepath.Join(d, "config"))
		if err == nil && fileExists(filepath.Join(d, "HEAD")) && dirExists(filepath.Join(d, "objects")) && dirExists(filepath.Join(d, "refs")) {
			for _, l := range strings.Split(string(cfg), "\n") {
				if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok && strings.TrimSpace(k) == "bare" && strings.TrimSpace(v) == "true" {
					return d
				}
			}
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
