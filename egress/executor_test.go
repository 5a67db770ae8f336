package egress_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/egress"
	"github.com/muster-run/muster/internal/agentkit/clitest"
	"github.com/muster-run/muster/mockllm"
)

// agentFunc is an executor whose agent is a function given the request
// (its Endpoint set by the wrapper).
type agentFunc func(req *muster.ExecRequest, emit func(muster.Record)) error

func (f agentFunc) Execute(_ context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
	return &muster.ExecResult{}, f(req, emit)
}

func callModel(t *testing.T, req *muster.ExecRequest, prompt string) int {
	t.Helper()
	body := `{"model":"m1","input":[{"role":"user","content":"` + prompt + `"}]}`
	r, _ := http.NewRequest(http.MethodPost, req.Endpoint.BaseURL+"/responses", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+req.Endpoint.Key)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	// Read the answer to its end, as an agent does: the endpoint counts a
	// response's usage when it has passed all of it on, so a caller that
	// hangs up after the headers races its next request against the count.
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// The wrapper reports the provider's usage as it is seen and the agent's
// own usage as a claim beside it; where a response had none, provider
// usage is unavailable and what the agent claims past it counts; a 429
// of the provider makes the failure a rate limit; a nil emit is fine.
func TestExecutorSettlesUsage(t *testing.T) {
	m := mock(t, &mockllm.Script{Scenarios: []mockllm.Scenario{
		{Name: "default", Steps: []mockllm.Step{{Text: "ok", Usage: &mockllm.Usage{InputTokens: 50, OutputTokens: 5}}}},
		{Name: "raw", Match: "no usage", Steps: []mockllm.Step{{Raw: `{"id":"x","output":[]}`}}},
		{Name: "limited", Match: "limit", Steps: []mockllm.Step{{Status: 429, RetryAfter: "9"}}},
	}})
	t.Setenv("EGRESS_EXEC_KEY", realKey)
	spec := &muster.ExecutorSpec{Name: "c", Kind: muster.ExecCommand, BaseURL: m.URL + "/v1", APIKeyEnv: "EGRESS_EXEC_KEY"}
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{spec}}
	run := func(prompts []string, claim int64, fail error) (*clitest.Recorder, error) {
		rec := &clitest.Recorder{}
		x := egress.Wrap(agentFunc(func(req *muster.ExecRequest, emit func(muster.Record)) error {
			if req.Endpoint == nil || req.Endpoint.Key != muster.PlaceholderKey {
				t.Fatalf("endpoint %+v: want muster's, with the placeholder", req.Endpoint)
			}
			for _, p := range prompts {
				callModel(t, req, p)
			}
			emit(muster.Record{Type: muster.RecUsage, Model: "m1", Usage: muster.Usage{InputTokens: claim}})
			return fail
		}), spec, cfg, nil)
		_, err := x.Execute(context.Background(), &muster.ExecRequest{Spec: spec}, rec.Emit)
		return rec, err
	}

	rec, err := run([]string{"a", "b"}, 70, nil)
	if err != nil {
		t.Fatal(err)
	}
	var prov, claimed int64
	for _, r := range rec.Of(muster.RecUsage) {
		switch r.Source {
		case muster.UsageProvider:
			prov += r.Usage.InputTokens
		case muster.UsageClaim:
			claimed += r.Usage.InputTokens
		default:
			t.Errorf("counted agent usage beside the provider's: %+v", r)
		}
	}
	if prov != 100 || claimed != 70 {
		t.Fatalf("provider %d claimed %d, want 100 and 70: %+v %+v", prov, claimed, rec.Records, m.Requests())
	}

	rec, _ = run([]string{"a", "no usage"}, 80, nil)
	unavailable, rest := false, int64(0)
	for _, r := range rec.Of(muster.RecUsage) {
		if r.Source == muster.UsageProvider && r.Text == muster.UsageUnavailable {
			unavailable = true
		}
		if r.Source == "" {
			rest += r.Usage.InputTokens
		}
	}
	if !unavailable || rest != 30 {
		t.Fatalf("unavailable %v, counted rest of the claim %d (want 80-50=30): %+v", unavailable, rest, rec.Records)
	}

	_, err = run([]string{"limit"}, 0, &muster.AgentError{Class: muster.FailExit, Message: "exit 1"})
	var ae *muster.AgentError
	if !errors.As(err, &ae) || ae.Class != muster.FailRateLimit || ae.RetryAfter.Seconds() != 9 {
		t.Fatalf("err %v, want a rate limit with the provider's retry-after", err)
	}

	x := egress.Wrap(agentFunc(func(req *muster.ExecRequest, emit func(muster.Record)) error {
		callModel(t, req, "a")
		emit(muster.Record{Type: muster.RecMessage, Text: "hi"})
		return nil
	}), spec, cfg, nil)
	if _, err := x.Execute(context.Background(), &muster.ExecRequest{Spec: spec}, nil); err != nil {
		t.Fatalf("nil emit: %v", err)
	}
}
