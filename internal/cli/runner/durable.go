package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/procid"
	"github.com/muster-run/muster/journal"
	"github.com/muster-run/muster/planfile"
	"github.com/muster-run/muster/receipt"
)

// CrashEnv names the test-only environment variable that makes the
// driver kill itself with SIGKILL at a chosen point (driver.Options.CrashAt);
// the crash test uses it to land kill -9 mid-commit and mid-integration.
const CrashEnv = "MUSTER_CRASH_AT"

// lockPatience polls of lockPoll: how long a run's lock is retried before
// another process is taken to hold it.
const (
	lockPatience = 40
	lockPoll     = 50 * time.Millisecond
)

// openJournal opens a run's journal and takes its lock; a run another
// live muster process drives is an environment error (exit 3).
func openJournal(repo *cmdutil.Repo, runID string) (*journal.Journal, []muster.Event, error) {
	path := repo.JournalPath(runID)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, cmdutil.Env("create run directory: %w", err)
	}
	j, replayed, err := journal.Open(path, journal.Options{})
	// A process killed a moment ago may still share the lock through a
	// child between fork and exec: give that a moment to pass.
	for wait := 0; errors.Is(err, journal.ErrLocked) && wait < lockPatience; wait++ {
		time.Sleep(lockPoll)
		j, replayed, err = journal.Open(path, journal.Options{})
	}
	if errors.Is(err, journal.ErrLocked) {
		return nil, nil, cmdutil.Env("run %s is being driven by another muster process (its journal %s is locked); wait for it to end, or stop it first", runID, path)
	}
	if err != nil {
		return nil, nil, cmdutil.Env("%w", err)
	}
	return j, replayed, nil
}

// pruneStale removes the worktrees of runs no live process holds (their
// journal unlocked), other than the run about to be driven. Failures
// only leave disk space behind, so they are not fatal.
func pruneStale(ctx context.Context, repo *cmdutil.Repo, current string) {
	_ = git.PruneStale(ctx, repo.Top, func(id string) bool {
		return id == current || journal.Locked(repo.JournalPath(id))
	})
}

// killOrphan stops the process group an agent of a crashed muster left
// running (p.PID leads it) and waits, briefly, until it is gone. It first
// checks that the pid is still that agent (same start time, same boot):
// after a reboot, or once the pid went to another process, the group is
// left alone and the error says why.
func killOrphan(p muster.Process) error {
	pid := p.PID
	if pid <= 0 || syscall.Kill(-pid, 0) != nil {
		return nil
	}
	if err := procid.Check(p); err != nil {
		return err
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for i := 0; i < 250 && groupAlive(pid); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// groupAlive reports whether process group pgid has a member that is not
// a zombie. Killed orphans are reaped by init, not by us, and an init
// that reaps late (or never, as in a container whose first process does
// not) left the resume waiting for corpses. Without /proc, any member
// counts.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + p.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parens.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			return true
		}
	}
	return false
}

// seal writes the run's receipt (at the end of a run, finished or
// interrupted). A journal whose file vanished (its run directory was
// deleted) seals nothing and is an environment error: the run's record
// is gone. A receipt that cannot be written otherwise is a warning: the
// run itself is done and its journal is intact.
func (s *Session) seal(j *journal.Journal, tip string) error {
	if s.Dir == "" {
		return nil
	}
	if err := j.Check(); err != nil {
		return cmdutil.Env("%w: no receipt was sealed", err)
	}
	b, err := os.ReadFile(s.Repo.JournalPath(s.RunID))
	if err == nil {
		var r *receipt.Receipt
		if r, err = receipt.Seal(b, receipt.Input{HashPlan: func(v int) string { return cmdutil.PlanHash(s.Dir, v) }, Final: tip, Now: time.Now()}); err == nil {
			if err = r.Write(s.Dir); err == nil {
				s.Receipt = r
				return nil
			}
		}
	}
	fmt.Fprintf(s.IO.ErrOut, "warning: receipt not sealed: %v\n", err)
	return nil
}

// MaxDelegated caps the tasks one delegating task may add.
const MaxDelegated = 50

// fragment is the driver's Fragment port: it parses the plan-out file a
// delegating task's agent wrote, validates it against the plan so far
// and the crew, and prepares the tasks to splice in.
func fragment(cfg *muster.Config) func(parent *muster.Task, path string, data []byte, existing []*muster.Task) ([]*muster.Task, error) {
	return func(parent *muster.Task, path string, data []byte, existing []*muster.Task) ([]*muster.Task, error) {
		name := filepath.Base(path)
		frag, probs := planfile.Parse(name, data)
		if errs := probs.Errors(); len(errs) > 0 {
			return nil, errs
		}
		if errs := planfile.ValidateFragment(parent, &muster.Plan{Tasks: existing}, frag, cfg, MaxDelegated).Errors(); len(errs) > 0 {
			return nil, errs
		}
		return planfile.Splice(parent, frag), nil
	}
}

// sealFinished seals the receipt of a run that ended but whose process
// died before it sealed (or whose receipt no longer covers the journal),
// and removes the worktrees it left.
func (s *Session) sealFinished(ctx context.Context, st *engine.State) error {
	j, replayed, err := openJournal(s.Repo, s.RunID)
	if err != nil {
		return err
	}
	defer j.Close()
	ws, err := git.Open(ctx, git.Options{Repo: s.Repo.Top, RunID: s.RunID, Base: st.Base, Resume: true, Tip: st.Tip})
	if err != nil {
		return classifyGit(err)
	}
	defer ws.Close(context.WithoutCancel(ctx))
	s.Dir = ws.RunDir()
	if r, err := receipt.Read(s.Dir); err == nil && r.Journal.Lines == len(replayed) {
		return nil
	}
	tip, err := ws.Tip(ctx)
	if err != nil {
		return classifyGit(err)
	}
	return s.seal(j, tip)
}
