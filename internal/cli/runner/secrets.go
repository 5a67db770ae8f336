package runner

import (
	"maps"
	"os"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/config"
	"github.com/muster-run/muster/internal/agentkit"
	"github.com/muster-run/muster/internal/proc"
)

// Journaled returns the copy of cfg that goes into the journal: the
// executors' env entries named like credentials (FOO_API_KEY, GH_TOKEN,
// DB_PASSWORD, ...) are left out, so that no secret from muster.toml
// reaches the journal (DESIGN.md §7). The executors run with cfg itself.
func Journaled(cfg *muster.Config) *muster.Config {
	if cfg == nil {
		return nil
	}
	cp := *cfg
	cp.Executors = make([]*muster.ExecutorSpec, len(cfg.Executors))
	for i, e := range cfg.Executors {
		ec := *e
		if len(e.Env) > 0 {
			ec.Env = maps.Clone(e.Env)
			for k := range ec.Env {
				if proc.IsSecretName(k) {
					delete(ec.Env, k)
				}
			}
		}
		cp.Executors[i] = &ec
	}
	return &cp
}

// restoreSecrets puts back, into a config replayed from a journal, the
// credential env entries Journaled left out: they are read again from
// the config file the run recorded, for executors of the same name and
// kind. A file that is gone or no longer loads restores nothing.
func restoreSecrets(cfg *muster.Config) {
	if cfg.Source == "" {
		return
	}
	file, err := config.Load(cfg.Source)
	if err != nil {
		return
	}
	for _, e := range cfg.Executors {
		fe := file.Executor(e.Name)
		if fe == nil || fe.Kind != e.Kind {
			continue
		}
		for k, v := range fe.Env {
			if !proc.IsSecretName(k) {
				continue
			}
			if e.Env == nil {
				e.Env = map[string]string{}
			}
			if _, ok := e.Env[k]; !ok {
				e.Env[k] = v
			}
		}
	}
}

// Redactor returns the redaction the attempt logs pass through: the
// values of credential-named variables of muster's environment and of the
// executors' env, and key-shaped strings, become "[redacted]" (the same
// redaction the agent adapters apply to what they keep).
func Redactor(cfg *muster.Config) func(string) string {
	var secrets []string
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && proc.IsSecretName(k) {
			secrets = append(secrets, v)
		}
	}
	if cfg != nil {
		for _, e := range cfg.Executors {
			for k, v := range e.Env {
				if proc.IsSecretName(k) {
					secrets = append(secrets, v)
				}
			}
		}
	}
	return agentkit.NewStream(nil, secrets...).Redact
}
