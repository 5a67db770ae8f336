package cmdutil

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/muster-run/muster"

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
	return hashFile(p, canon)
}

// versionName is the shape of an adopted plan version's file name.
var versionName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^plan-[0-9]+\.(md|yaml|yml)$`) })

// PlanVersionName is the file name of the n-th version (n >= 2) of a
// run's plan, beside the first copy (whose extension it keeps):
// plan-2.md, plan-3.yaml.
func PlanVersionName(first string, n int) string {
	ext := strings.ToLower(filepath.Ext(first))
	if ext == "" {
		ext = ".md"
	}
	return fmt.Sprintf("plan-%d%s", n, ext)
}

// PlanVersionPath returns the path of an adopted version's file in a run
// directory; false when the name (from the journal or the receipt) is not
// one muster writes.
func PlanVersionPath(dir, name string) (string, bool) {
	if !versionName().MatchString(name) {
		return "", false
	}
	return filepath.Join(dir, name), true
}

// PlanFileHash returns the hash of an adopted version of the plan in a
// run directory, in version canon of the canonical form; empty when the
// name is not a version's, or the file is missing or does not parse.
func PlanFileHash(dir, name string, canon int) string {
	p, ok := PlanVersionPath(dir, name)
	if !ok || !fileExists(p) {
		return ""
	}
	return hashFile(p, canon)
}

// NewestPlanCopy returns the path of the run's newest copy of its plan:
// the file of the last PlanAdopted in events, else the first copy.
func NewestPlanCopy(dir string, events []muster.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == muster.EvPlanAdopted {
			if p, ok := PlanVersionPath(dir, events[i].Plan); ok {
				return p
			}
			break
		}
	}
	return PlanCopy(dir)
}

// hashFile is the hash of the plan file at p in version canon.
func hashFile(p string, canon int) string {
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
