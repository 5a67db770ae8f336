package acp

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/muster-run/muster/internal/acp"
	"github.com/muster-run/muster/internal/agentkit"
	"github.com/muster-run/muster/internal/proc"
)

// Bounds on terminals (shell authority only).
const (
	maxTerminals      = 16      // terminals alive at once
	maxTerminalOutput = 1 << 20 // bytes of output kept per terminal
	maxTerminalEnv    = 200     // variables a terminal may set
)

// terminals are the commands the agent runs through the client, each in
// its own process group under internal/proc.
type terminals struct {
	x    *session
	mu   sync.Mutex
	m    map[string]*terminal
	next int
	wg   sync.WaitGroup
}

type terminal struct {
	mu        sync.Mutex
	out       []byte
	limit     int
	truncated bool
	exit      *acp.ExitStatus
	done      chan struct{}
	kill      context.CancelFunc
}

func (t *terminal) write(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.out = append(t.out, line...)
	t.out = append(t.out, '\n')
	if len(t.out) > t.limit {
		// Keep the end, cut on a character boundary.
		cut := len(t.out) - t.limit
		for cut < len(t.out) && (t.out[cut]&0xC0) == 0x80 {
			cut++
		}
		t.out = append(t.out[:0], t.out[cut:]...)
		t.truncated = true
	}
}

func (ts *terminals) serve(ctx context.Context, method string, params json.RawMessage) (any, *acp.Error) {
	if method == acp.MethodTermCreate {
		var p acp.CreateTerminalParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, acp.Errorf(acp.CodeInvalidParams, "%v", err)
		}
		return ts.create(&p)
	}
	var p acp.TerminalParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, acp.Errorf(acp.CodeInvalidParams, "%v", err)
	}
	ts.mu.Lock()
	t := ts.m[p.TerminalID]
	ts.mu.Unlock()
	if t == nil {
		return nil, acp.Errorf(acp.CodeNotFound, "no terminal %q", agentkit.Clip(p.TerminalID, 50))
	}
	switch method {
	case acp.MethodTermOutput:
		t.mu.Lock()
		defer t.mu.Unlock()
		return acp.TerminalOutputResult{Output: string(t.out), Truncated: t.truncated, ExitStatus: t.exit}, nil
	case acp.MethodTermWait:
		select {
		case <-t.done:
		case <-ctx.Done():
			return nil, acp.Errorf(acp.CodeInternal, "the session ended")
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.exit, nil
	case acp.MethodTermKill:
		t.kill()
		return struct{}{}, nil
	}
	// release
	t.kill()
	ts.mu.Lock()
	delete(ts.m, p.TerminalID)
	ts.mu.Unlock()
	return struct{}{}, nil
}

func (ts *terminals) create(p *acp.CreateTerminalParams) (any, *acp.Error) {
	x := ts.x
	dir := x.req.Dir
	if p.CWD != "" {
		root, rel, ok := x.inside(p.CWD, false)
		if !ok {
			return nil, x.violation(acp.MethodTermCreate, p.CWD)
		}
		dir = filepath.Join(root, rel)
	}
	if p.Command == "" {
		return nil, acp.Errorf(acp.CodeInvalidParams, "terminal/create: no command")
	}
	if len(p.Env) > maxTerminalEnv {
		return nil, acp.Errorf(acp.CodeInvalidParams, "terminal/create: more than %d variables", maxTerminalEnv)
	}
	limit := maxTerminalOutput
	if p.OutputByteLimit != nil && *p.OutputByteLimit >= 0 && *p.OutputByteLimit < int64(limit) {
		limit = int(*p.OutputByteLimit)
	}
	env := append([]string(nil), x.env...)
	for _, v := range p.Env {
		env = append(env, v.Name+"="+v.Value)
	}
	ts.mu.Lock()
	if len(ts.m) >= maxTerminals {
		ts.mu.Unlock()
		return nil, acp.Errorf(acp.CodeInternal, "terminal/create: %d terminals at once is the limit", maxTerminals)
	}
	ts.next++
	id := "term-" + strconv.Itoa(ts.next)
	ctx, kill := context.WithCancel(context.Background())
	t := &terminal{limit: limit, done: make(chan struct{}), kill: kill}
	ts.m[id] = t
	ts.wg.Add(1)
	ts.mu.Unlock()
	x.note("terminal " + id + ": " + agentkit.Clip(p.Command, 200))
	grace := x.req.Grace
	if grace <= 0 {
		grace = 2 * time.Second
	}
	// Lives until the command's group is gone (kill, release or the end
	// of the session stop it).
	go func() {
		defer ts.wg.Done()
		defer kill()
		res, err := proc.Run(ctx, proc.Spec{
			Argv: append([]string{p.Command}, p.Args...), Dir: dir, Env: env, Grace: grace,
			Confine: x.req.Confine, OnLine: t.write, OnStderr: t.write,
		})
		st := &acp.ExitStatus{}
		switch {
		case err != nil:
			t.write(err.Error())
			code := 127
			st.ExitCode = &code
		case res.ExitCode < 0:
			sig := "SIGKILL"
			if res.Stopped == "" {
				sig = "SIGTERM"
			}
			st.Signal = &sig
		default:
			code := res.ExitCode
			st.ExitCode = &code
		}
		t.mu.Lock()
		t.exit = st
		t.mu.Unlock()
		close(t.done)
	}()
	return acp.CreateTerminalResult{TerminalID: id}, nil
}

// closeAll stops every terminal and waits for them.
func (ts *terminals) closeAll() {
	ts.mu.Lock()
	for _, t := range ts.m {
		t.kill()
	}
	ts.mu.Unlock()
	ts.wg.Wait()
}
