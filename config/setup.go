package config

import (
	"fmt"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/suggest"
)

var (
	setupKeys     = []string{"commands", "network", "allow_hosts"}
	setupStepKeys = []string{"command", "inputs", "caches", "outputs"}
	gateTableKeys = []string{"command", "junit"}
)

// setup reads the [setup] table: its network keys, commands (a list of
// command strings), NAME = "command" steps and [setup.NAME] tables (command, inputs, caches,
// outputs). A step's inputs, caches and outputs default to what its
// program implies (muster.SetupDefaults).
func (r *reader) setup(n *muster.Network, t map[string]any) []muster.SetupStep {
	var out []muster.SetupStep
	names := map[string]bool{}
	add := func(st muster.SetupStep, explicit map[string]bool) {
		in, ca, outs := muster.SetupDefaults(st.Command)
		if !explicit["inputs"] {
			st.Inputs = in
		}
		if !explicit["caches"] {
			st.Caches = ca
		}
		if !explicit["outputs"] {
			st.Outputs = outs
		}
		out = append(out, st)
	}
	for _, k := range r.sortedKeys(t, "setup") {
		p := []string{"setup", k}
		switch v := t[k].(type) {
		case map[string]any:
			st, explicit, ok := r.setupTable(k, v, p)
			if ok {
				names[k] = true
				add(st, explicit)
			}
			continue
		}
		if r.netKey(n, k, t[k], p, false) {
			continue
		}
		if k != "commands" {
			if st, ok := r.setupNamed(k, t[k], p); ok {
				names[k] = true
				add(st, nil)
			}
			continue
		}
		for _, c := range r.strings(t[k], p) {
			if strings.TrimSpace(c) == "" {
				r.at(p, `commands: want command strings, such as commands = ["npm ci"]`)
				continue
			}
			name := strings.Fields(c)[0]
			for i := 2; names[name]; i++ {
				name = fmt.Sprintf("%s-%d", strings.Fields(c)[0], i)
			}
			names[name] = true
			add(muster.SetupStep{Name: name, Command: c, Line: r.pos.line(p...)}, nil)
		}
	}
	return out
}

// setupNamed reads NAME = "command" in [setup] (ARCHITECTURE.md §2.4:
// npm = "npm ci", the short form of a [setup.NAME] table, as in
// [gates]). A key that looks like a misspelt key of [setup] is that.
func (r *reader) setupNamed(name string, v any, p []string) (muster.SetupStep, bool) {
	if suggest.Nearest(name, setupKeys) != "" {
		r.unknown(setupKeys, p...)
		return muster.SetupStep{}, false
	}
	c, ok := v.(string)
	if !ok || strings.TrimSpace(c) == "" {
		r.at(p, `setup %s: want a command string, such as %s = "npm ci"`, name, name)
		return muster.SetupStep{}, false
	}
	return muster.SetupStep{Name: name, Command: c, Line: r.pos.line(p...)}, true
}

func (r *reader) setupTable(name string, t map[string]any, p []string) (muster.SetupStep, map[string]bool, bool) {
	st := muster.SetupStep{Name: name, Line: r.pos.line(p...)}
	explicit := map[string]bool{}
	for _, k := range r.sortedKeys(t, p...) {
		kp := append(append([]string{}, p...), k)
		explicit[k] = true
		switch k {
		case "command":
			st.Command = r.str(t[k], kp)
		case "inputs":
			st.Inputs = r.strings(t[k], kp)
		case "caches":
			st.Caches = r.strings(t[k], kp)
		case "outputs":
			st.Outputs = r.strings(t[k], kp)
		default:
			r.unknown(setupStepKeys, kp...)
		}
	}
	if strings.TrimSpace(st.Command) == "" {
		r.at(p, `setup %s: want a command, such as command = "npm ci"`, name)
		return st, nil, false
	}
	return st, explicit, true
}

// gateTable reads a [gates.NAME] table: command and junit (a glob of the
// JUnit XML reports the gate writes).
func (r *reader) gateTable(name string, t map[string]any, p []string) (muster.GateSpec, bool) {
	g := muster.GateSpec{Name: name, Line: r.pos.line(p...)}
	for _, k := range r.sortedKeys(t, p...) {
		kp := append(append([]string{}, p...), k)
		switch k {
		case "command":
			g.Command = r.str(t[k], kp)
		case "junit":
			g.JUnit = r.str(t[k], kp)
		default:
			r.unknown(gateTableKeys, kp...)
		}
	}
	if strings.TrimSpace(g.Command) == "" {
		r.at(p, `gate %s: want a command, such as command = "npm test"`, name)
		return g, false
	}
	return g, true
}
