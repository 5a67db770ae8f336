// Package status is the muster status command.
package status

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/textsafe"
	"github.com/muster-run/muster/journal"
)

// Task is one task in status --json (ARCHITECTURE.md §2.6).
type Task struct {
	ID       string           `json:"id"`
	Title    string           `json:"title"`
	State    muster.TaskState `json:"state"`
	Attempts int              `json:"attempts"`
	Executor *string          `json:"executor"`
	Commit   *string          `json:"commit"`
	Reason   *string          `json:"reason"`
	// Worker is the fleet worker the latest attempt ran on (null: locally).
	Worker *string `json:"worker"`
	// View is the text form's "worker/executor#clone" (the worker's clone).
	View string `json:"-"`
	// Round and Phase are for the text form only: the JSON object has
	// exactly the keys of ARCHITECTURE.md §2.6.
	Round int    `json:"-"`
	Phase string `json:"-"`
}

// Usage is the run's usage in status --json.
type Usage struct {
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"-"` // not in the JSON (ARCHITECTURE.md §2.6)
	CacheWriteTokens int64   `json:"-"` // not in the JSON (ARCHITECTURE.md §2.6)
	CostUSD          float64 `json:"cost_usd"`
}

// Status is status --json's object (ARCHITECTURE.md §2.6).
type Status struct {
	Run    string `json:"run"`
	State  string `json:"state"`
	Plan   string `json:"plan"`
	Branch string `json:"branch"`
	Base   string `json:"base"`
	Dir    string `json:"dir"`
	Tasks  []Task `json:"tasks"`
	// Started is the run's first event, Ended its last once it is not
	// running (null while it runs), both RFC 3339.
	Started string  `json:"started"`
	Ended   *string `json:"ended"`
	Usage   Usage   `json:"usage"`
}

// Build folds a run's events into its status. live says whether a muster
// process holds the run now: a run that is not finished and not live was
// interrupted (or crashed) and is resumable.
func Build(st *engine.State, dir string, live bool) *Status {
	s := &Status{Run: st.Run, Plan: st.Plan, Branch: st.Branch, Base: st.Base, Dir: dir, Tasks: []Task{}}
	switch {
	case st.RunState == muster.RunRunning && !live:
		s.State = muster.RunInterrupted
	default:
		s.State = st.RunState
	}
	for _, id := range st.Order {
		t := st.Tasks[id]
		state := t.State
		if state == muster.StateRunning && !live {
			state = muster.StateCancelled
		}
		out := Task{ID: string(id), Title: t.Task.Title, State: state, Attempts: t.Attempts, Round: t.Round}
		if state == muster.StateRunning {
			out.Phase = t.Phase
		}
		if t.Executor != "" {
			slot := muster.Slot(t.Executor, t.Clone)
			out.Executor = &slot
		}
		if t.Commit != "" {
			c := t.Commit
			out.Commit = &c
		}
		if t.Worker != "" {
			w := t.Worker
			out.Worker = &w
			out.View = w + "/" + muster.Slot(t.Executor, t.WorkerClone)
		}
		if t.Reason != "" && state != muster.StateSucceeded {
			r := t.Reason
			out.Reason = &r
		} else if state == muster.StateCancelled && !live && t.State == muster.StateRunning {
			r := "interrupted"
			out.Reason = &r
		}
		s.Tasks = append(s.Tasks, out)
	}
	s.Started = rfc3339(st.Start)
	if s.State != muster.RunRunning && !st.LastTime.IsZero() {
		e := rfc3339(st.LastTime)
		s.Ended = &e
	}
	u := st.Usage
	s.Usage = Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, CostUSD: float64(u.CostMicros) / 1e6}
	return s
}

// NewCmd returns muster status.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	var repoDir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [RUN]",
		Short: "Where a run stands (default: the latest run)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			repo, err := cmdutil.OpenRepo(cmd.Context(), repoDir)
			if err != nil {
				return err
			}
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			if id, err = repo.ResolveRun(id); err != nil {
				return err
			}
			events, err := repo.ReadRun(id)
			if err != nil {
				return err
			}
			st, err := engine.Replay(events)
			if err != nil {
				return cmdutil.Env("journal of run %s does not replay: %w", id, err)
			}
			s := Build(st, repo.RunDir(id), journal.Locked(repo.JournalPath(id)))
			if asJSON {
				return cmdutil.WriteJSON(io.Out, s)
			}
			printText(io, s, st)
			printBlocked(io, events)
			return nil
		},
	}
	cmd.Flags().StringVar(&repoDir, "repo", "", "repository (default: current directory)")
	// --config is a common flag (ARCHITECTURE.md §2.1); a run's config is in its
	// journal, so it changes nothing here.
	cmd.Flags().String("config", "", "config file (accepted for symmetry; a run's config is in its journal)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: run, state, plan, branch, base, dir, tasks, started, ended, usage")
	return cmd
}

func printText(io *cmdutil.IOStreams, s *Status, st *engine.State) {
	w := io.Out
	// [succeeded/all], as muster runs and the HTML report count: a
	// cancelled or failed task is not done (resume runs it again).
	done := 0
	for _, t := range s.Tasks {
		if t.State == muster.StateSucceeded {
			done++
		}
	}
	elapsed := st.Elapsed().Round(time.Second) // active time: gaps before resumes left out
	fmt.Fprintf(w, "run %s  %s  [%d/%d]  %s  %s\n", s.Run, s.State, done, len(s.Tasks), elapsed, muster.FormatUSD(muster.MicrosOfUSD(s.Usage.CostUSD)))
	fmt.Fprintf(w, "branch %s  base %s\n\n", s.Branch, textsafe.Short(s.Base))
	waits := st.AwaitingJoin()
	for _, t := range s.Tasks {
		ex, extra := "", ""
		if t.Executor != nil {
			ex = *t.Executor
		}
		if t.View != "" {
			ex = textsafe.Sanitize(t.View)
		}
		if t.Commit != nil {
			extra = textsafe.Short(*t.Commit)
		}
		if t.State == muster.StateRunning {
			extra = t.Phase
			if t.Round > 0 {
				extra += fmt.Sprintf(" round %d", t.Round)
			}
		}
		if t.Reason != nil {
			extra = strings.TrimSpace(extra + " " + textsafe.Sanitize(*t.Reason))
		}
		if need, ok := waits[muster.TaskID(t.ID)]; ok && t.State == muster.StatePending {
			extra = "waits for a fleet worker serving " + textsafe.Sanitize(need) + " to join ([fleet] join_wait)"
		}
		fmt.Fprintf(w, "  %-10s %-16s %-12s %s\n", t.State, t.ID, ex, extra)
	}
}

// printBlocked lists the requests muster refused the run's invocations
// (Blocked events), at most maxBlockedShown of them.
func printBlocked(io *cmdutil.IOStreams, events []muster.Event) {
	const maxBlockedShown = 20
	n := 0
	for i := range events {
		e := &events[i]
		if e.Type != muster.EvBlocked {
			continue
		}
		if n == 0 {
			fmt.Fprintf(io.Out, "\nnetwork refused (allow a host with allow_hosts):\n")
		}
		if n++; n <= maxBlockedShown {
			fmt.Fprintf(io.Out, "  %-16s %-12s %s\n", e.Task, textsafe.Sanitize(e.Slot()), textsafe.Sanitize(e.BlockedText()))
		}
	}
	if n > maxBlockedShown {
		fmt.Fprintf(io.Out, "  ... and %d more (muster logs TASK shows each)\n", n-maxBlockedShown)
	}
}

// rfc3339 formats a journal time for JSON, in UTC ("" for none).
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
