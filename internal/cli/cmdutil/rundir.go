package cmdutil

import (
	"path/filepath"

	"github.com/muster-run/muster/planfile"
)

// The run directory's facts, beside the repository's (runs.go): what a
// run leaves in its directory, read by verify, resume and the run itself.

// HooksFile, in the run directory, holds a digest of the repository's
// config and hooks as the run started; --merge runs only with those.
const HooksFile = "hooks.json"

// PlanCopy returns the path of the plan copied into a run directory.
func PlanCopy(dir string) string {
	for _, n := range []string{"plan.md", "plan.yaml", "plan.yml"} {
		if p := filepath.Join(dir, n); fileExists(p) {
			return p
		}
	}
	return ""
}

// PlanHash returns the hash of the plan copied into a run directory, in
// version canon of its canonical form; empty when the copy is missing or
// does not parse, or the version is unknown.
func PlanHash(dir string, canon int) string {
	p := PlanCopy(dir)
	if p == "" {
		return ""
	}
	pl, err := planfile.Load(p)
	if err != nil {
		return ""
	}
	h, err := planfile.HashAt(pl, canon)
	if err != nil {
		return ""
	}
	return h
}
