// Package agents builds the executor adapter of each executor kind. It is
// wiring: the only package besides the CLI that knows every adapter.
package agents

import (
	"fmt"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/agent/claude"
	"github.com/muster-run/muster/agent/codex"
	"github.com/muster-run/muster/agent/command"
	"github.com/muster-run/muster/agent/gemini"
	"github.com/muster-run/muster/agent/httpagent"
	"github.com/muster-run/muster/agent/opencode"
	"github.com/muster-run/muster/agent/sim"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/gate"
)

// New returns the adapter for spec's kind.
func New(spec *muster.ExecutorSpec) (muster.Executor, error) {
	switch spec.Kind {
	case muster.ExecSim:
		return sim.New(spec)
	case muster.ExecCommand:
		return command.New(spec)
	case muster.ExecOpenAI, muster.ExecAnthropic:
		return httpagent.New(spec)
	case muster.ExecClaudeCode:
		return claude.New(spec)
	case muster.ExecCodex:
		return codex.New(spec)
	case muster.ExecGemini:
		return gemini.New(spec)
	case muster.ExecOpencode:
		return opencode.New(spec)
	}
	return nil, fmt.Errorf("executor %s: unknown kind %q (one of %v)", spec.Name, spec.Kind, muster.ExecutorKinds)
}

// Crew builds every executor of cfg, plus the runner of Kind: code tasks.
func Crew(cfg *muster.Config, runner gate.Runner) (map[string]muster.Executor, error) {
	out := map[string]muster.Executor{engine.CodeExecutor: gate.CodeExecutor{Runner: runner}}
	for _, spec := range cfg.Executors {
		if spec.Fleet {
			continue // the fleet's workers run it (wired by the caller)
		}
		e, err := New(spec)
		if err != nil {
			return nil, &muster.Error{Code: muster.CodeInvalid, Message: err.Error()}
		}
		out[spec.Name] = e
	}
	return out, nil
}
