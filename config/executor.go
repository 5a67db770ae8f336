package config

import (
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/suggest"
)

func (r *reader) executors(t map[string]any) []*muster.ExecutorSpec {
	out := []*muster.ExecutorSpec{}
	for _, name := range r.sortedKeys(t, "executors") {
		p := []string{"executors", name}
		et, ok := r.table(t[name], p...)
		if !ok {
			continue
		}
		if !namePattern().MatchString(name) {
			r.at(p, `bad executor name %q: use letters, digits, ".", "_" and "-"`, name)
		}
		e := &muster.ExecutorSpec{Name: name, Clones: 1, Line: r.pos.line(p...)}
		r.executor(e, et, p)
		out = append(out, e)
	}
	return out
}

func (r *reader) executor(e *muster.ExecutorSpec, t map[string]any, path []string) {
	sub := func(k string) []string { return append(append([]string{}, path...), k) }
	hasKind := false
	for _, k := range r.sortedKeys(t, path...) {
		v, p := t[k], sub(k)
		switch k {
		case "kind":
			hasKind = true
			r.execKind(e, v, p)
		case "clones":
			r.clones(e, v, p)
		case "roles":
			r.roles(e, v, p)
		case "model":
			e.Model = r.str(v, p)
		case "models":
			e.Models = r.strings(v, p)
		case "base_url":
			e.BaseURL = r.str(v, p)
		case "api_key_env":
			r.apiKeyEnv(e, v, p)
		case "env":
			e.Env = r.env(v, p, e.Name)
		case "args":
			e.Args = r.strings(v, p)
		case "command":
			e.Command = r.strings(v, p)
		case "timeout":
			e.Timeout = r.duration(v, p)
			if e.Timeout > muster.MaxTaskTimeout {
				r.at(p, "executor %s: timeout %s is more than the cap of %s", e.Name, e.Timeout, muster.MaxTaskTimeout)
			}
		case "max_concurrent":
			e.MaxConcurrent = r.count(v, 0, p)
		case "env_allow":
			e.EnvAllow = r.envNames(v, p)
		case "writable":
			e.Writable = r.paths(v, p)
		case "network":
			e.Network = r.network(v, p)
		case "allow_hosts":
			e.AllowHosts = r.allowHosts(v, p)
		case "seed":
			if n, ok := v.(int64); ok {
				e.Seed = n
			} else {
				r.at(p, "seed: want a whole number")
			}
		case "speed":
			if f, ok := r.number(v, p); ok {
				e.Speed = f
			}
		default:
			r.unknown(executorKeys, p...)
		}
	}
	r.executorWhole(e, path, hasKind)
}

// executorWhole checks what an executor's keys say together.
func (r *reader) executorWhole(e *muster.ExecutorSpec, path []string, hasKind bool) {
	switch {
	case !hasKind:
		r.at(path, "executor %s: missing kind (one of %s)", e.Name, strings.Join(muster.ExecutorKinds, ", "))
	case e.Kind != "" && muster.LookupKind(e.Kind).NeedsCommand && len(e.Command) == 0:
		r.at(path, `executor %s: kind %q needs command = ["program", "arg", ...]`, e.Name, e.Kind)
	case len(e.Command) > 0 && strings.TrimSpace(e.Command[0]) == "":
		r.at(append(append([]string{}, path...), "command"), `executor %s: command = [%q, ...] names no program: its first element is the program to run`, e.Name, e.Command[0])
	case e.Kind == muster.ExecSim && e.HasRole(muster.RolePlanner):
		r.at(append(append([]string{}, path...), "roles"), `executor %s: kind "sim" cannot plan: give the role "planner" to an agent or a command`, e.Name)
	}
	if len(e.Roles) == 0 {
		e.Roles = []muster.Role{muster.RoleCoder}
	}
}

// execKind reads an executor's kind, one of the registry's.
func (r *reader) execKind(e *muster.ExecutorSpec, v any, p []string) {
	s := r.str(v, p)
	if s == "" {
		return
	}
	if !contains(muster.ExecutorKinds, s) {
		if n := suggest.Nearest(s, muster.ExecutorKinds); n != "" {
			r.at(p, "executor %s: unknown kind %q; did you mean %q?", e.Name, s, n)
		} else {
			r.at(p, "executor %s: unknown kind %q (known kinds: %s)", e.Name, s, strings.Join(muster.ExecutorKinds, ", "))
		}
		return
	}
	e.Kind = muster.ExecKind(s)
}

// clones reads an executor's clones, 1 to the cap.
func (r *reader) clones(e *muster.ExecutorSpec, v any, p []string) {
	e.Clones = r.count(v, 1, p)
	if e.Clones > muster.MaxClones {
		r.at(p, "executor %s: clones = %d is more than the cap of %d", e.Name, e.Clones, muster.MaxClones)
		e.Clones = muster.MaxClones
	}
	if e.Clones < 1 {
		e.Clones = 1
	}
}

// roles reads an executor's roles: at least one, each a name.
func (r *reader) roles(e *muster.ExecutorSpec, v any, p []string) {
	for _, role := range r.strings(v, p) {
		e.Roles = append(e.Roles, muster.Role(role))
		if !namePattern().MatchString(role) {
			r.at(p, "executor %s: bad role %q: use letters, digits, \".\", \"_\" and \"-\"", e.Name, role)
		}
		// Roles are free-form; a built-in one in another case is a slip.
		if low := muster.Role(strings.ToLower(role)); string(low) != role &&
			(low == muster.RoleCoder || low == muster.RoleReviewer || low == muster.RolePlanner) {
			r.at(p, "executor %s: role %q: did you mean %q? (roles are lower case)", e.Name, role, low)
		}
	}
	if v, ok := v.([]any); ok && len(v) == 0 {
		r.at(p, "executor %s: roles: want at least one role, such as \"coder\"", e.Name)
	}
}

// apiKeyEnv reads the name of the variable holding an executor's key.
func (r *reader) apiKeyEnv(e *muster.ExecutorSpec, v any, p []string) {
	s := r.str(v, p)
	if s != "" && !envNamePattern().MatchString(s) {
		// Never echo the value: it may be the key itself.
		r.at(p, "executor %s: api_key_env: want the name of an environment variable that holds the key, not the key", e.Name)
		return
	}
	e.APIKeyEnv = s
}

func (r *reader) env(v any, p []string, exec string) map[string]string {
	t, ok := v.(map[string]any)
	if !ok {
		r.at(p, "executor %s: env: want a table of NAME = \"value\"", exec)
		return nil
	}
	out := make(map[string]string, len(t))
	for _, k := range r.sortedKeys(t, p...) {
		kp := append(append([]string{}, p...), k)
		if !envNamePattern().MatchString(k) {
			r.at(kp, "executor %s: env: bad variable name %q", exec, k)
			continue
		}
		s, ok := t[k].(string)
		if !ok {
			// Never echo the value: it may be a secret.
			r.at(kp, "executor %s: env.%s: want a string", exec, k)
			continue
		}
		out[k] = s
	}
	return out
}

// envNames reads a list of environment variable names.
func (r *reader) envNames(v any, p []string) []string {
	names := r.strings(v, p)
	for _, n := range names {
		if !envNamePattern().MatchString(n) {
			// Never echo the entry: it may be a secret put in the wrong place.
			r.at(p, `%s: want names of environment variables, such as ["SSH_AUTH_SOCK"]`, p[len(p)-1])
			return nil
		}
	}
	return names
}
