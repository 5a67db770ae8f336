// Package agents builds the executor adapter of each executor kind. It is
// wiring: the only package besides the CLI that knows every adapter.
package agents

import (
	"context"
	"fmt"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/agent/acp"
	"github.com/muster-run/muster/agent/claude"
	"github.com/muster-run/muster/agent/codex"
	"github.com/muster-run/muster/agent/command"
	"github.com/muster-run/muster/agent/gemini"
	"github.com/muster-run/muster/agent/httpagent"
	"github.com/muster-run/muster/agent/opencode"
	"github.com/muster-run/muster/agent/pi"
	"github.com/muster-run/muster/agent/sim"
	"github.com/muster-run/muster/egress"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/gate"
)

// adapters builds the adapter of each kind family; the kinds themselves
// are muster.Kinds.
var adapters = map[muster.KindFamily]func(*muster.ExecutorSpec) (muster.Executor, error){
	muster.FamilySim:     func(s *muster.ExecutorSpec) (muster.Executor, error) { return sim.New(s) },
	muster.FamilyCommand: func(s *muster.ExecutorSpec) (muster.Executor, error) { return command.New(s) },
	muster.FamilyHTTP:    func(s *muster.ExecutorSpec) (muster.Executor, error) { return httpagent.New(s) },
	muster.FamilyACP:     func(s *muster.ExecutorSpec) (muster.Executor, error) { return acp.New(s) },
	muster.FamilyCLI:     newCLI,
}

// clis are the adapters of the CLI family, by kind.
var clis = map[muster.ExecKind]func(*muster.ExecutorSpec) (muster.Executor, error){
	muster.ExecClaudeCode: func(s *muster.ExecutorSpec) (muster.Executor, error) { return claude.New(s) },
	muster.ExecCodex:      func(s *muster.ExecutorSpec) (muster.Executor, error) { return codex.New(s) },
	muster.ExecGemini:     func(s *muster.ExecutorSpec) (muster.Executor, error) { return gemini.New(s) },
	muster.ExecOpencode:   func(s *muster.ExecutorSpec) (muster.Executor, error) { return opencode.New(s) },
	muster.ExecPi:         func(s *muster.ExecutorSpec) (muster.Executor, error) { return pi.New(s) },
}

func newCLI(spec *muster.ExecutorSpec) (muster.Executor, error) {
	if f := clis[spec.Kind]; f != nil {
		return f(spec)
	}
	return nil, fmt.Errorf("executor %s: no adapter for kind %q", spec.Name, spec.Kind)
}

// New returns the adapter for spec's kind.
func New(spec *muster.ExecutorSpec) (muster.Executor, error) {
	k := muster.LookupKind(spec.Kind)
	if k == nil {
		return nil, fmt.Errorf("executor %s: unknown kind %q (one of %v)", spec.Name, spec.Kind, muster.ExecutorKinds)
	}
	return adapters[k.Family](spec)
}

// Crew builds every executor of cfg, plus the runner of Kind: code tasks.
// The agents of kinds that speak HTTP to a provider run behind muster's
// model endpoint (egress), without a run budget there; CrewWithin gives
// it one.
func Crew(cfg *muster.Config, runner gate.Runner) (map[string]muster.Executor, error) {
	return CrewWithin(cfg, runner, nil)
}

// CrewWithin is Crew whose model endpoints answer 429 once ledger says
// the run's budget is spent.
func CrewWithin(cfg *muster.Config, runner gate.Runner, ledger *egress.Ledger) (map[string]muster.Executor, error) {
	out := map[string]muster.Executor{engine.CodeExecutor: gate.CodeExecutor{Runner: runner}}
	for _, spec := range cfg.Executors {
		if spec.Fleet {
			continue // the fleet's workers run it (wired by the caller)
		}
		e, err := New(spec)
		if err != nil {
			return nil, &muster.Error{Code: muster.CodeInvalid, Message: err.Error()}
		}
		out[spec.Name] = withSpec(egress.Wrap(e, spec, cfg, ledger), spec)
	}
	return out, nil
}

// withSpec makes e run every request with its own spec: the driver's
// requests carry the journaled one, whose secrets (env entries, keys in
// args or base_url) are taken out or redacted.
func withSpec(e muster.Executor, spec *muster.ExecutorSpec) muster.Executor {
	o := ownSpec{e: e, spec: spec}
	if _, ok := e.(muster.ScratchFree); ok {
		return ownSpecFree{o}
	}
	return o
}

type ownSpec struct {
	e    muster.Executor
	spec *muster.ExecutorSpec
}

func (o ownSpec) Execute(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
	r := *req
	r.Spec = o.spec
	return o.e.Execute(ctx, &r, emit)
}

type ownSpecFree struct{ ownSpec }

func (ownSpecFree) ScratchFree() {}
