package clitest

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/mockllm"
	"github.com/muster-run/muster/mockllm/mockllmtest"
)

// LiveConfig describes one adapter's integration test against its
// installed CLI.
type LiveConfig struct {
	// Spec names the executor: Name, Kind, Model and APIKeyEnv; StartLive
	// fills in Clones, BaseURL and Command.
	Spec muster.ExecutorSpec
	// URLPath is appended to the mock model server's URL to make the
	// spec's base_url ("" or "/v1", as the CLI expects it).
	URLPath string
	// Key is the API key put into Spec.APIKeyEnv; it must never leak.
	Key string
	// Launcher, when set, confines every invocation as muster run does
	// (muster.Confinement): it may write the directory of its scratch
	// (the clone's home, TMPDIR, prompt) and, unless its authority is
	// read, its repository.
	// The test binary must then handle muster.ConfineCommand.
	Launcher string
	// Sandbox, with Launcher, runs every invocation in the sandbox's
	// namespaces (muster.Confinement.Namespaces) with a network of its
	// own: the CLI reaches the mock model server only through the bridge,
	// which forwards to it, as muster's endpoint does.
	Sandbox bool
	// Wrap, when set, wraps the adapter (muster's model endpoint:
	// egress.Wrap), as the command line does.
	Wrap func(muster.Executor, *muster.ExecutorSpec) muster.Executor
}

// Live is an adapter under test that drives the installed CLI against the
// mock model server (see Script for the scenarios).
type Live struct {
	Exec muster.Executor      // the adapter under test
	Spec *muster.ExecutorSpec // its spec, pointing at the installed CLI and the server
	Key  string               // the API key, which must never leak
	// Launcher confines each invocation (see LiveConfig.Launcher).
	Launcher string
	// Sandbox: see LiveConfig.Sandbox; the bridge forwards to upstream.
	Sandbox  bool
	upstream string
	// NoSession says the kind has no agent session (muster's HTTP agent):
	// Write does not ask for one.
	NoSession bool
	// Behind: the executor is behind muster's model endpoint, whose
	// provider numbers count. They cover every request the agent made,
	// also those it does not report (opencode's title request), so Write
	// wants at least the script's usage, from the provider.
	Behind bool
	// Mock is the mock model server.
	Mock *mockllm.Server
	// Req, Res and Rec are the first invocation's, set by Write.
	Req *muster.ExecRequest
	Res *muster.ExecResult
	Rec *Recorder
}

// StartLive finds the installed CLI of cfg.Spec.Kind (see Binary: outside
// CI a missing CLI skips the test), starts the mock model server, sets the
// key's variable and builds the executor with newExec.
func StartLive[E muster.Executor](t *testing.T, newExec func(*muster.ExecutorSpec) (E, error), cfg LiveConfig) *Live {
	t.Helper()
	bin := Binary(t, cfg.Spec.Kind)
	srv := mockllmtest.Start(t, Script())
	t.Setenv(cfg.Spec.APIKeyEnv, cfg.Key)
	spec := cfg.Spec
	spec.Clones, spec.BaseURL, spec.Command = 1, srv.URL+cfg.URLPath, []string{bin}
	upstream := strings.TrimPrefix(srv.URL, "http://")
	if cfg.Sandbox && cfg.Wrap == nil {
		// Inside the sandbox the server is the bridge's port (behind
		// muster's endpoint, Wrap's bridge forwards to the server).
		spec.BaseURL = fmt.Sprintf("http://127.0.0.1:%d%s", bridgePort, cfg.URLPath)
	}
	e, err := newExec(&spec)
	if err != nil {
		t.Fatal(err)
	}
	var exec muster.Executor = e
	if cfg.Wrap != nil {
		exec = cfg.Wrap(exec, &spec)
	}
	return &Live{Exec: exec, Spec: &spec, Key: cfg.Key, Launcher: cfg.Launcher, Sandbox: cfg.Sandbox, upstream: upstream, Mock: srv}
}

// Write runs the coder's first invocation with write authority in a fresh
// git repository, playing scenario (which writes hello.txt), and checks the
// file, the usage (with a cost when cost is set) and the session. When the
// test ends, no record, tail or file of the run may hold the key.
func (l *Live) Write(t *testing.T, scenario string, cost bool) {
	t.Helper()
	l.Req = Request(t, l.Spec, muster.RoleCoder, muster.AuthorityWrite, "Create hello.txt. [scenario: "+scenario+"]")
	l.Req.Dir = GitRepo(t)
	l.Rec = &Recorder{}
	l.Res = l.execute(t, l.Req, l.Rec)
	if got := ReadFile(filepath.Join(l.Req.Dir, "hello.txt")); got != "hello\n" {
		t.Fatalf("hello.txt = %q\n%s", got, l.Res.Tail)
	}
	if u := l.Rec.Usage(); l.Behind {
		provider := false
		for _, r := range l.Rec.Of(muster.RecUsage) {
			provider = provider || r.Source == muster.UsageProvider
		}
		if !provider || u.InputTokens < 2200 || u.OutputTokens < 70 {
			t.Errorf("usage behind the endpoint %+v (provider numbers: %v), want at least the script's 2200 in, 70 out", u, provider)
		}
	} else if u.InputTokens != 2200 || u.OutputTokens != 70 || (cost && u.CostMicros == 0) {
		t.Errorf("usage %+v", u)
	}
	if l.Res.SessionID == "" && !l.NoSession {
		t.Fatal("no session ID")
	}
	t.Cleanup(func() { NoSecret(t, l.Key, l.Rec, l.Res, filepath.Dir(l.Req.Scratch), l.Req.Dir) })
}

// Review runs a reviewer round with read authority that resumes Write's
// session and checks its findings; with usage set, also that only this
// round's usage is reported.
func (l *Live) Review(t *testing.T, usage bool) {
	t.Helper()
	req := *l.Req
	req.Role, req.Authority, req.SessionID = muster.RoleReviewer, muster.AuthorityRead, l.Res.SessionID
	req.Prompt = "Review the change. [scenario: review]"
	rec := &Recorder{}
	res := l.execute(t, &req, rec)
	if res.SessionID != l.Res.SessionID {
		t.Errorf("session %q, want the resumed %q", res.SessionID, l.Res.SessionID)
	}
	if !res.Reviewed || len(res.Findings) != 1 || res.Findings[0].Severity != "major" {
		t.Errorf("findings %+v", res.Findings)
	}
	if u := rec.Usage(); usage && (u.InputTokens != 500 || u.OutputTokens != 40) {
		t.Errorf("review usage %+v", u)
	}
	NoSecret(t, l.Key, rec, res, filepath.Dir(req.Scratch), req.Dir)
}

// Writes checks that with authority auth the agent playing scenario
// writes hello.txt in a fresh repository.
func (l *Live) Writes(t *testing.T, auth muster.Authority, scenario string) {
	t.Helper()
	req := l.inRepo(t, auth, scenario)
	res := l.execute(t, req, nil)
	if got := ReadFile(filepath.Join(req.Dir, "hello.txt")); got != "hello\n" {
		t.Fatalf("hello.txt = %q\n%s", got, res.Tail)
	}
}

// Refuses checks that with authority auth the agent playing scenario
// (which tries to write hello.txt) leaves a fresh repository unchanged.
func (l *Live) Refuses(t *testing.T, auth muster.Authority, scenario string) {
	t.Helper()
	req := l.inRepo(t, auth, scenario)
	l.execute(t, req, nil)
	if _, err := os.Stat(filepath.Join(req.Dir, "hello.txt")); err == nil {
		t.Fatalf("a %s-authority agent wrote hello.txt (%s)", auth, scenario)
	}
}

// Fails checks that the invocation playing scenario fails with class;
// stall, when not zero, is the request's stall limit.
func (l *Live) Fails(t *testing.T, scenario string, stall time.Duration, class muster.FailureClass) {
	t.Helper()
	req := *l.Req
	req.Prompt = "[scenario: " + scenario + "]"
	req.Stall = stall
	l.confine(t, &req)
	_, err := l.Exec.Execute(context.Background(), &req, nil)
	WantClass(t, err, class)
}

// inRepo is Write's request with authority auth and scenario in a fresh
// repository.
func (l *Live) inRepo(t *testing.T, auth muster.Authority, scenario string) *muster.ExecRequest {
	req := *l.Req
	req.Dir = GitRepo(t)
	req.Authority = auth
	req.Prompt = "Create hello.txt. [scenario: " + scenario + "]"
	return &req
}

// execute runs req, failing the test on an error.
func (l *Live) execute(t *testing.T, req *muster.ExecRequest, rec *Recorder) *muster.ExecResult {
	t.Helper()
	var emit func(muster.Record)
	if rec != nil {
		emit = rec.Emit
	}
	l.confine(t, req)
	res, err := l.Exec.Execute(context.Background(), req, emit)
	if err != nil {
		tail := ""
		if res != nil {
			tail = res.Tail
		}
		t.Fatalf("execute: %v\n%s", err, tail)
	}
	return res
}

// confine confines req when the test asks for it, as the driver does:
// the directory of its scratch (with a TMPDIR there) and, unless its
// authority is read, its repository.
func (l *Live) confine(t *testing.T, req *muster.ExecRequest) {
	t.Helper()
	if l.Launcher == "" {
		return
	}
	area := filepath.Dir(req.Scratch)
	tmp := filepath.Join(area, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TMPDIR": tmp}
	for k, v := range req.Env {
		env[k] = v
	}
	req.Env = env
	req.Confine = &muster.Confinement{Launcher: l.Launcher, Writable: []string{area}}
	if req.Authority != muster.AuthorityRead {
		req.Confine.Writable = append(req.Confine.Writable, req.Dir)
	} else {
		req.Confine.ReadOnly = append(req.Confine.ReadOnly, req.Dir)
	}
	if l.Sandbox {
		home, _ := os.UserHomeDir()
		req.Confine.Namespaces = true
		req.Confine.Hide = []string{"/run", filepath.Join(home, ".ssh"), filepath.Join(home, ".aws")}
		req.Confine.Bridge = &muster.Bridge{Port: bridgePort, Serve: func(ln net.Listener) { go forward(ln, l.upstream) }}
	}
}

// bridgePort is the port of the bridge inside a sandbox (any port: the
// network namespace is the invocation's own).
const bridgePort = 47600

// forward relays every connection accepted on ln to upstream until ln is
// closed.
func forward(ln net.Listener, upstream string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				return
			}
			defer u.Close()
			go func() { _, _ = io.Copy(u, c) }()
			_, _ = io.Copy(c, u)
		}()
	}
}

// Run runs one invocation with authority auth playing scenario in a fresh
// repository, failing the test on an error, and returns it.
func (l *Live) Run(t *testing.T, auth muster.Authority, scenario string) (*muster.ExecRequest, *muster.ExecResult, *Recorder) {
	t.Helper()
	if l.Req == nil {
		l.Req = Request(t, l.Spec, muster.RoleCoder, auth, "")
	}
	req := l.inRepo(t, auth, scenario)
	rec := &Recorder{}
	res := l.execute(t, req, rec)
	return req, res, rec
}
