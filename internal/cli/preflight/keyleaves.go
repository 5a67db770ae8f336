package preflight

import (
	"fmt"
	"slices"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/egress"
)

// keysLeaving warns of each command, generic ACP or Copilot executor
// whose program holds its real key: without a base_url (muster cannot
// know its provider, so the key is passed on), or with one when its
// env_allow lets the key through: behind muster's model
// endpoint such a program would hold a placeholder, and with the key in
// its environment any tool it runs can send the key anywhere
// (docs/security.md).
func keysLeaving(cfg *muster.Config) muster.Problems {
	var out muster.Problems
	for _, e := range cfg.Executors {
		if e.Kind != muster.ExecCommand && e.Kind != muster.ExecACP && e.Kind != muster.ExecCopilot {
			continue
		}
		key := egress.KeyEnv(e)
		if key == "" {
			continue
		}
		if e.BaseURL == "" {
			out = append(out, muster.Problem{File: cfg.Source, Line: e.Line, Warning: true,
				Message: fmt.Sprintf("executor %s: api_key_env %s without base_url: the program holds the real key, which then leaves muster (any tool it runs can send it anywhere); set base_url to put it behind muster's endpoint with a placeholder (docs/security.md)", e.Name, key)})
			continue
		}
		if !slices.Contains(e.EnvAllow, key) && !slices.Contains(cfg.Run.EnvAllow, key) {
			continue
		}
		out = append(out, muster.Problem{File: cfg.Source, Line: e.Line, Warning: true,
			Message: fmt.Sprintf("executor %s: env_allow lets its key %s through: the program holds the real key, which then leaves muster (any tool it runs can send it anywhere); drop it from env_allow to give the program a placeholder and let muster's endpoint add the key (docs/security.md)", e.Name, key)})
	}
	return out
}
