package driver

import (
	"fmt"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/exchange"
)

// confinement returns what an invocation of spec with authority auth
// on this attempt's clone may write: the run's Confine plus the
// invocation's own directories (inv.Writable: out/, its home, its
// TMPDIR; never in/, never the attempt's directory that holds other
// invocations'), the executor's own writable paths and, unless auth is
// read, the clone (its work tree and its own git directory inside it).
// nil when agents run unconfined. dir is where the invocation works: the
// clone, or a reviewer's checkout of the change (read-only to it). This
// is the one list of what an agent invocation may write (ARCHITECTURE.md
// §8.1, §8.2).
func (w *worker) confinement(spec *muster.ExecutorSpec, auth muster.Authority, inv *exchange.Dir, dir string) *muster.Confinement {
	c := w.d.opts.Confine
	if c == nil {
		return nil
	}
	paths := inv.Writable()
	c = c.WithReadOnly(inv.Readable()...) // in/, bound back read-only in the sandbox
	if auth != muster.AuthorityRead {
		paths = append(paths, dir)
		if c.Namespaces && w.cfg != nil {
			c = c.WithReadOnly(setupOutputs(w.cfg.Setup, dir)...)
		}
	} else {
		c = c.WithReadOnly(dir) // seen, in the sandbox, where the cache is hidden
	}
	if spec != nil {
		paths = append(paths, spec.Writable...)
	}
	return c.With(paths...)
}

// setupOutputs are the outputs of the setup steps present in the clone
// dir that an agent sees read-only (muster.SetupOutputs: the rule a
// fleet worker applies too).
func setupOutputs(steps []muster.SetupStep, dir string) []string {
	return muster.SetupOutputs(steps, dir)
}

// exchangeFor makes the fresh directory of one invocation (prefix names
// it: r<k> for a coder's round, review-r<k> for a reviewer), writes its
// prompt into in/ and points req at it: Scratch, PromptFile, Home and a
// TMPDIR of its own (unless the executor's env table sets one). A coder
// (shared) gets the attempt's home and TMPDIR, made once and reused by
// its later rounds; every other invocation fresh ones.
//
// before, when set, runs once the directory exists and before the prompt
// is written (a reviewer's diff, and a prompt that names its file).
func (w *worker) exchangeFor(req *muster.ExecRequest, prefix string, shared bool, before func(*exchange.Dir) error) (*exchange.Dir, error) {
	var o exchange.Options
	if shared {
		if w.home == "" {
			home, err := exchange.NewHome(w.scratch, "home")
			if err != nil {
				return nil, err
			}
			tmp, err := exchange.NewHome(w.scratch, "tmp")
			if err != nil {
				return nil, err
			}
			w.home, w.tmp = home, tmp
		}
		o = exchange.Options{Home: w.home, Tmp: w.tmp}
	}
	inv, err := exchange.New(w.scratch, prefix, o)
	if err != nil {
		return nil, err
	}
	if before != nil {
		if err := before(inv); err != nil {
			return nil, err
		}
	}
	if req.PromptFile, err = inv.WriteIn("prompt.md", []byte(req.Prompt)); err != nil {
		return nil, fmt.Errorf("the prompt file: %w", err)
	}
	req.Scratch, req.Home = inv.Path, inv.Home
	if req.Spec != nil {
		if _, ok := req.Spec.Env["TMPDIR"]; ok {
			return inv, nil
		}
	}
	env := make(map[string]string, len(req.Env)+1)
	for k, v := range req.Env {
		env[k] = v
	}
	env["TMPDIR"] = inv.Tmp
	req.Env = env
	return inv, nil
}
