package preflight

import (
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/config"
	"github.com/muster-run/muster/internal/redact"
)

// Redactor returns the run's redactor (internal/redact): the secrets of
// muster's environment except [run] env_allow, the key each executor's
// api_key_env names, and the secrets of each executor's env table.
func Redactor(cfg *muster.Config) *redact.Redactor {
	vals := redact.Environ(os.Environ(), cfg.Run.EnvAllow...)
	for _, e := range cfg.Executors {
		if e.APIKeyEnv != "" {
			vals = append(vals, os.Getenv(e.APIKeyEnv))
		}
		for k, v := range e.Env {
			if !allowed(cfg, e, k) {
				vals = append(vals, redact.Values(k, v)...)
			}
		}
		vals = append(vals, redact.Values("", e.BaseURL)...)
	}
	return redact.New(vals...)
}

func allowed(cfg *muster.Config, e *muster.ExecutorSpec, name string) bool {
	for _, a := range cfg.EnvAllowOf(e) {
		if a == name {
			return true
		}
	}
	return false
}

// AllowEnv gives every executor the run's env_allow, so that each adapter
// knows from its spec alone which variables it passes on.
func AllowEnv(cfg *muster.Config) {
	if len(cfg.Run.EnvAllow) == 0 {
		return
	}
	for _, e := range cfg.Executors {
		have := map[string]bool{}
		for _, n := range e.EnvAllow {
			have[n] = true
		}
		for _, n := range cfg.Run.EnvAllow {
			if !have[n] {
				e.EnvAllow = append(e.EnvAllow, n)
			}
		}
	}
}

// Journaled returns the copy of cfg that goes into the journal: the
// executors' env entries that are credentials (redact.IsSecret: named
// like FOO_API_KEY, GH_TOKEN, DB_PASSWORD, ..., or a URL with user-info)
// are left out unless env_allow names them, and every other text that
// may hold a secret (env values, base_url, args, command) is redacted, so
// that no secret from muster.toml reaches the journal (ARCHITECTURE.md §2.5, docs/secrets.md).
// The executors run with cfg itself.
func Journaled(cfg *muster.Config) *muster.Config {
	if cfg == nil {
		return nil
	}
	red := Redactor(cfg)
	cp := *cfg
	cp.Executors = make([]*muster.ExecutorSpec, len(cfg.Executors))
	for i, e := range cfg.Executors {
		ec := *e
		if len(e.Env) > 0 {
			ec.Env = maps.Clone(e.Env)
			for k, v := range ec.Env {
				switch {
				case allowed(cfg, e, k):
				case redact.IsSecret(k, v):
					delete(ec.Env, k)
				default:
					ec.Env[k] = red.String(v)
				}
			}
		}
		ec.BaseURL = red.String(e.BaseURL)
		ec.Args = red.Strings(slices.Clone(e.Args))
		ec.Command = red.Strings(slices.Clone(e.Command))
		cp.Executors[i] = &ec
	}
	return &cp
}

// RestoreSecrets puts back, into a config replayed from a journal, what
// Journaled left out or redacted: it is read again from the config file
// the run recorded, for executors of the same name and kind. A file that
// is gone or no longer loads restores nothing.
func RestoreSecrets(cfg *muster.Config) {
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
			cur, ok := e.Env[k]
			if ok && !strings.Contains(cur, redact.Mark) {
				continue
			}
			if !ok && !redact.IsSecret(k, v) {
				continue
			}
			if e.Env == nil {
				e.Env = map[string]string{}
			}
			e.Env[k] = v
		}
		if strings.Contains(e.BaseURL, redact.Mark) {
			e.BaseURL = fe.BaseURL
		}
		if hasMark(e.Args) {
			e.Args = fe.Args
		}
		if hasMark(e.Command) {
			e.Command = fe.Command
		}
	}
}

func hasMark(ss []string) bool {
	for _, s := range ss {
		if strings.Contains(s, redact.Mark) {
			return true
		}
	}
	return false
}
