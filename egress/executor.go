package egress

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit"
)

// Executor puts the invocations of an executor behind muster's model
// endpoint and proxy: each invocation gets a server of its own on a
// fresh listener, the agent gets its URL in place of the provider's and
// a placeholder in place of the key, and what the server saw (the
// provider's usage, refusals, rate limits) is reported as records.
type Executor struct {
	Inner muster.Executor
	// Config is the run's configuration: the network policies.
	Config *muster.Config
	// Ledger is the run's budget (nil: none).
	Ledger *Ledger
	// Price prices the provider's usage for a job's own ledger (a
	// request with BudgetLeft); nil: a USD budget left counts only what
	// the provider priced itself.
	Price func(model string, u muster.Usage) (int64, bool)
	// Listen opens the listener the server is reached on (nil: a port on
	// 127.0.0.1, the fallback where there is no network namespace).
	Listen func() (net.Listener, error)
}

// Wrap returns e behind the endpoint for the executors of kinds that
// speak HTTP to a provider (Behind); other executors are returned as
// they are.
func Wrap(e muster.Executor, spec *muster.ExecutorSpec, cfg *muster.Config, ledger *Ledger) muster.Executor {
	if spec == nil || !Behind(spec.Kind) || spec.Fleet {
		return e
	}
	return &Executor{Inner: e, Config: cfg, Ledger: ledger}
}

// KeyEnv is the variable an executor's key is read from (the adapter's).
func KeyEnv(spec *muster.ExecutorSpec) string {
	if k := agentkit.Lookup(spec.Kind); k != nil {
		return agentkit.KeyName(spec, k)
	}
	return spec.APIKeyEnv
}

// Execute runs one invocation behind a server of its own.
func (x *Executor) Execute(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
	if req.Spec == nil {
		return x.Inner.Execute(ctx, req, emit)
	}
	if emit == nil {
		emit = func(muster.Record) {}
	}
	cfg := x.Config
	if cfg == nil {
		cfg = &muster.Config{}
	}
	netw := cfg.AgentNetwork(req.Spec)
	var route *Route
	if netw.Policy != muster.NetNone {
		var err error
		spec := agentkit.WithModel(req.Spec, req)
		if route, err = RouteFor(spec, req.Model, KeyEnv(spec)); err != nil {
			return nil, agentkit.StartFailure(err)
		}
	}
	var mu sync.Mutex
	done := false // after the invocation, a late record of a handler is dropped
	out := func(r muster.Record) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			emit(r)
		}
	}
	ledger := x.Ledger
	if req.BudgetLeft != nil {
		ledger = JobLedger(req.BudgetLeft, x.Price)
	}
	srv := New(Options{Route: route, Network: netw, Report: out, Ledger: ledger})
	defer srv.Close()
	r := *req
	base, err := x.listen(srv, &r, netw)
	if err != nil {
		return nil, agentkit.StartFailure(err)
	}
	// The open network is the host's as it is: no proxy in the way (the
	// model endpoint still holds the key where muster knows the route).
	r.Endpoint = &muster.ModelEndpoint{}
	if netw.Policy != muster.NetOpen {
		r.Endpoint.Proxy = base
	}
	if route != nil {
		r.Endpoint.BaseURL = base + route.Upstream.Path
		if route.Key != "" {
			r.Endpoint.Key = muster.PlaceholderKey
		}
	}
	var claims []muster.Record
	res, err := x.Inner.Execute(ctx, &r, func(rec muster.Record) {
		if rec.Type == muster.RecUsage && route != nil {
			mu.Lock()
			claims = append(claims, rec)
			mu.Unlock()
			return
		}
		out(rec)
	})
	_ = srv.Close()
	mu.Lock()
	done = true
	mu.Unlock()
	seen := srv.Result()
	if route != nil {
		settle(seen, claims, emit)
	}
	return res, rateLimited(err, seen)
}

// listen puts srv where the invocation reaches it and returns its URL.
// In a network namespace of its own (the confinement step's, unless the
// policy is open) that is the bridge: a listener on 127.0.0.1:PORT inside
// the namespace, which muster serves from outside; nothing of the host's
// network is there. Elsewhere it is a listener on the host's loopback.
func (x *Executor) listen(srv *Server, r *muster.ExecRequest, netw muster.Network) (string, error) {
	if c := r.Confine; c != nil && c.Namespaces && netw.Policy != muster.NetOpen {
		port, err := freePort()
		if err != nil {
			return "", err
		}
		nc := c.WithBridge(&muster.Bridge{Port: port, Serve: srv.Serve})
		nc.HostNetwork = false
		r.Confine = nc
		return "http://127.0.0.1:" + strconv.Itoa(port), nil
	}
	listen := x.Listen
	if listen == nil {
		listen = func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
	}
	ln, err := listen()
	if err != nil {
		return "", err
	}
	srv.Serve(ln)
	return "http://" + ln.Addr().String(), nil
}

// freePort is a port for the bridge: any port is free in a new network
// namespace; one free here too keeps the URL the same on both sides.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// settle reports the agent's usage claims beside the provider's usage
// (already reported, one record per response): as claims, never counted,
// when every response carried usage; else the provider's usage is
// unavailable, and what the agent claims past it counts.
func settle(seen Result, claims []muster.Record, emit func(muster.Record)) {
	if len(claims) == 0 && seen.Missing == 0 {
		return
	}
	if seen.Missing == 0 && len(seen.Usage) > 0 {
		for _, c := range claims {
			c.Source = muster.UsageClaim
			emit(c)
		}
		return
	}
	emit(muster.Record{Type: muster.RecUsage, Source: muster.UsageProvider, Text: muster.UsageUnavailable})
	var claimed, provided muster.Usage
	model := ""
	for _, c := range claims {
		claimed.Add(c.Usage)
		if model == "" {
			model = c.Model
		}
	}
	for _, p := range seen.Usage {
		provided.Add(p.Usage)
	}
	rest := muster.Usage{
		InputTokens:      max(claimed.InputTokens-provided.InputTokens, 0),
		OutputTokens:     max(claimed.OutputTokens-provided.OutputTokens, 0),
		CacheReadTokens:  max(claimed.CacheReadTokens-provided.CacheReadTokens, 0),
		CacheWriteTokens: max(claimed.CacheWriteTokens-provided.CacheWriteTokens, 0),
	}
	if len(seen.Usage) == 0 {
		rest.CostMicros = claimed.CostMicros // the agent's own price of its own numbers
	}
	if !rest.IsZero() {
		emit(muster.Record{Type: muster.RecUsage, Model: model, Usage: rest})
	}
}

// rateLimited classifies a failed invocation that met a 429 from the
// provider as a rate limit, so that the pacing rule slows its credential
// whatever the agent made of it.
func rateLimited(err error, seen Result) error {
	if err == nil || !seen.RateLimited {
		return err
	}
	var ae *muster.AgentError
	if errors.As(err, &ae) {
		switch ae.Class {
		case muster.FailRateLimit, muster.FailUsageLimit, muster.FailTimeout, muster.FailStart:
			if ae.Class == muster.FailRateLimit && ae.RetryAfter == 0 {
				ae.RetryAfter = seen.RetryAfter
			}
			return err
		}
		return &muster.AgentError{Class: muster.FailRateLimit, ExitCode: ae.ExitCode, RetryAfter: seen.RetryAfter,
			Message: "the provider answered 429 (seen by muster's endpoint): " + ae.Message}
	}
	return err
}
