package agentkit

import (
	"context"
	"fmt"

	"github.com/muster-run/muster"
)

// Base is what every CLI adapter's executor holds: its spec, its kind and
// the binary when it was found at construction.
type Base struct {
	Spec *muster.ExecutorSpec // the executor as configured
	Kind *Kind                // what muster knows of its CLI
	Bin  string               // resolved by NewBase when found; else at each Prepare
}

// NewBase checks that spec is of the executor kind kind (an empty spec
// kind is taken as kind) and looks the binary up; a missing binary is not
// an error here but is reported by Prepare, when the invocation runs.
func NewBase(spec *muster.ExecutorSpec, kind muster.ExecKind) (*Base, error) {
	if spec == nil {
		return nil, fmt.Errorf("%s: no executor spec", kind)
	}
	if spec.Kind != "" && spec.Kind != kind {
		return nil, fmt.Errorf("executor %s: kind %q is not %s", spec.Name, spec.Kind, kind)
	}
	b := &Base{Spec: spec, Kind: Lookup(kind)}
	b.Bin, _ = FindBinary(spec, b.Kind.Binary)
	return b, nil
}

// SpecFor is the executor's spec for req: a copy whose Model is the one
// the request asks for (a task's Model:), else the executor's own.
// Behind muster's model endpoint (req.Endpoint) its base URL is the
// endpoint's.
func (b *Base) SpecFor(req *muster.ExecRequest) *muster.ExecutorSpec {
	spec := WithModel(b.Spec, req)
	if req != nil && req.Endpoint != nil && req.Endpoint.BaseURL != "" && spec != nil {
		c := *spec
		c.BaseURL = req.Endpoint.BaseURL
		spec = &c
	}
	return spec
}

// WithModel returns spec, or a copy of it with req's model when the
// request asks for one.
func WithModel(spec *muster.ExecutorSpec, req *muster.ExecRequest) *muster.ExecutorSpec {
	if req == nil || req.Model == "" || spec == nil || req.Model == spec.Model {
		return spec
	}
	c := *spec
	c.Model = req.Model
	return &c
}

// Setup is what one invocation starts from: the binary, the clone's home
// and the API key (empty when the seeded login is used).
type Setup struct {
	Kind    *Kind
	Bin     string // the CLI's absolute path
	Home    string // the clone's private home (see Home)
	KeyName string // the variable the key is read from
	Key     string // the key; "": none, the login was seeded into Home
}

// Prepare readies one invocation of req: it resolves the binary (from
// req.Dir when NewBase did not find it), makes the clone's home, reads the
// API key and, without one, copies the user's login into the home. Its
// errors are *muster.AgentError of class FailStart.
func (b *Base) Prepare(req *muster.ExecRequest) (*Setup, error) {
	bin := b.Bin
	if bin == "" {
		var err error
		if bin, err = FindBinary(b.Spec, b.Kind.Binary, req.Dir); err != nil {
			return nil, StartFailure(err)
		}
	}
	home, err := Home(req)
	if err != nil {
		return nil, StartFailure(err)
	}
	s := &Setup{Kind: b.Kind, Bin: bin, Home: home}
	s.KeyName, s.Key = APIKey(b.SpecFor(req), b.Kind)
	if s.Key != "" && req.Endpoint != nil && req.Endpoint.BaseURL != "" {
		// muster's endpoint adds the real key; the agent never holds it.
		s.Key = req.Endpoint.Key
	}
	if s.Key == "" {
		if err := SeedLogin(b.Kind, home); err != nil {
			return nil, StartFailure(err)
		}
	}
	SeedConfig(b.Kind, home)
	return s, nil
}

// StartFailure is err as an agent that could not start.
func StartFailure(err error) *muster.AgentError {
	return &muster.AgentError{Class: muster.FailStart, ExitCode: -1, Message: err.Error()}
}

// Argv is the command line of the binary with args.
func (s *Setup) Argv(args []string) []string {
	return append([]string{s.Bin}, args...)
}

// Invocation returns the invocation of the binary with args in req.Dir:
// the scrubbed environment of the clone's home plus kindVars, the prompt
// on stdin, and the request's secrets and the key redacted.
func (s *Setup) Invocation(req *muster.ExecRequest, args []string, kindVars map[string]string, parse func([]byte, *Stream) error) Invocation {
	return Invocation{
		Kind:    s.Kind,
		Argv:    s.Argv(args),
		Env:     Environ(s.Home, kindVars, req),
		Dir:     req.Dir,
		Stdin:   Prompt(req),
		Secrets: Secrets(req, s.Key),
		Parse:   parse,
	}
}

// RunResuming runs inv; when resume is set and the session it resumes is
// not found, it lets fresh turn inv into a fresh start and runs that.
func RunResuming(ctx context.Context, req *muster.ExecRequest, inv Invocation, emit func(muster.Record), resume bool, fresh func(*Invocation)) (*muster.ExecResult, error) {
	res, _, err := Run(ctx, req, inv, emit)
	if resume && ResumeFailed(res, err) {
		fresh(&inv)
		res, _, err = Run(ctx, req, inv, emit)
	}
	return res, err
}
