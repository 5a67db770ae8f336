package driver

import (
	"os"
	"path/filepath"

	"github.com/muster-run/muster"
)

// confinement returns what an invocation of spec with authority auth
// on this attempt's clone may write: the run's Confine plus the
// attempt's scratch directory (which holds the agent's home, TMPDIR,
// prompt and diff files), the executor's own writable paths and, unless
// auth is read, the clone (its work tree and its own git directory
// inside it). nil when agents run unconfined.
func (w *worker) confinement(spec *muster.ExecutorSpec, auth muster.Authority) *muster.Confinement {
	c := w.d.opts.Confine
	if c == nil {
		return nil
	}
	paths := []string{w.scratch}
	if auth != muster.AuthorityRead {
		paths = append(paths, w.dir)
	} else {
		c = c.WithReadOnly(w.dir) // seen, in the sandbox, where the cache is hidden
	}
	if spec != nil {
		paths = append(paths, spec.Writable...)
	}
	return c.With(paths...)
}

// tmpdir gives the invocation a TMPDIR of its attempt's own, unless the
// executor's env table sets one.
func (w *worker) tmpdir(req *muster.ExecRequest) error {
	if req.Spec != nil {
		if _, ok := req.Spec.Env["TMPDIR"]; ok {
			return nil
		}
	}
	dir := filepath.Join(w.scratch, "tmp")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	env := make(map[string]string, len(req.Env)+1)
	for k, v := range req.Env {
		env[k] = v
	}
	env["TMPDIR"] = dir
	req.Env = env
	return nil
}
