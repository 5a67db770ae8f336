package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/acp"
	"github.com/muster-run/muster/internal/agentkit"
)

// Bounds on what one invocation keeps of an agent's updates.
var maxUpdates = 200000 // session updates; past it the agent is stopped (a variable for tests)

const (
	maxTools      = 10000 // tool calls remembered
	maxPlan       = 50    // plan entries kept
	maxMessageBuf = 64 << 10
)

// session is one invocation's state: the connection, the stream of
// records, and what the agent has said in this turn.
type session struct {
	req  *muster.ExecRequest
	home string // the clone's home
	// missingAsEmpty: see preset.missingAsEmpty.
	missingAsEmpty bool
	// total, when set, reads the session's cumulative usage (preset.usage)
	total     func(home, session string) (muster.Usage, bool)
	totalBase muster.Usage
	root      string // the worktree, symlinks resolved
	env       []string
	conn      *acp.Conn

	mu        sync.Mutex // guards everything below; emit runs under it
	s         *agentkit.Stream
	sessionID string
	loading   bool // a session/load replays history: not this turn's records
	msg       strings.Builder
	last      string // the turn's latest message chunk (bounded)
	final     strings.Builder
	tools     map[string]*toolState
	plan      []acp.PlanEntry
	cost      float64 // last cumulative cost (USD) reported
	costBase  float64 // the cumulative cost before this turn
	costSeen  bool
	// calls sums the per-call usage some agents put in their message
	// chunks' _meta (Qwen Code), for a turn whose reply carries none.
	calls     muster.Usage
	callsSeen bool
	updates   int
	flooded   bool
	terms     *terminals
}

func newSession(req *muster.ExecRequest, root string, emit func(muster.Record), secrets, env []string) *session {
	x := &session{req: req, root: root, env: env, tools: map[string]*toolState{}}
	x.s = agentkit.NewStream(emit, secrets...)
	x.terms = &terminals{x: x, m: map[string]*terminal{}}
	return x
}

func (x *session) emitLocked(r muster.Record) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.s.Emit(r)
}

func (x *session) note(text string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.s.Note(text)
}

func (x *session) redact(text string) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.s.Redact(text)
}

// line handles one stdout line of the agent.
func (x *session) line(l string) {
	if tr := os.Getenv("MUSTER_ACP_TRACE"); tr != "" {
		// A debugging aid: every line the agent sent, redacted, appended
		// to the file named.
		x.mu.Lock()
		red := x.s.Redact(l)
		x.mu.Unlock()
		if f, err := os.OpenFile(tr, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintln(f, red)
			f.Close()
		}
	}
	t := strings.TrimSpace(l)
	if t == "" {
		return
	}
	if !strings.HasPrefix(t, "{") || !x.conn.Feed([]byte(t)) {
		// Not a protocol message: agents should print nothing else on
		// stdout, but some log there.
		x.mu.Lock()
		x.s.Bad++
		x.s.Note(agentkit.Clip(t, 300))
		x.mu.Unlock()
	}
}

// turnResult is how the turn ended, before the process's end is known.
type turnResult struct {
	stop      string // the prompt's stop reason
	err       error  // an error reply or the connection's end
	protocol  bool   // err is the agent breaking the protocol
	cancelled bool   // ctx ended: session/cancel was sent
	timedOut  bool   // the timeout ended: session/cancel was sent
}

// drive runs the protocol: initialize, session/load or session/new, the
// model and mode, and the prompt, cancelling it on ctx or timeout.
func (x *session) drive(ctx context.Context, p *preset, spec *muster.ExecutorSpec, timeout, grace time.Duration) turnResult {
	sctx := ctx
	var stopTimer context.CancelFunc = func() {}
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
		sctx, stopTimer = context.WithTimeoutCause(ctx, timeout, errTimeout)
	}
	defer stopTimer()
	setupErr := func(err error) turnResult {
		switch {
		case ctx.Err() != nil:
			return turnResult{cancelled: true, err: err}
		case errors.Is(err, errTimeout):
			return turnResult{timedOut: true, err: err}
		}
		return turnResult{err: err}
	}

	var init acp.InitializeResult
	caps := acp.ClientCapabilities{
		FS:       acp.FSCapabilities{ReadTextFile: true, WriteTextFile: x.req.Authority != muster.AuthorityRead},
		Terminal: x.req.Authority == muster.AuthorityShell,
	}
	if err := x.conn.Call(sctx, acp.MethodInitialize, acp.InitializeParams{ProtocolVersion: acp.ProtocolVersion, ClientCapabilities: caps, ClientInfo: acp.ClientInfo}, &init); err != nil {
		return setupErr(fmt.Errorf("initialize: %w", err))
	}
	if init.ProtocolVersion != acp.ProtocolVersion {
		return turnResult{err: fmt.Errorf("the agent speaks ACP version %d; muster speaks %d", init.ProtocolVersion, acp.ProtocolVersion), protocol: true}
	}
	sres, err := x.open(sctx, init.AgentCapabilities.LoadSession)
	if err != nil {
		return setupErr(err)
	}
	if err := x.choose(sctx, p, spec, sres); err != nil {
		return setupErr(err)
	}

	x.mu.Lock()
	x.costBase = x.cost
	x.mu.Unlock()
	if p.usage != nil {
		x.total = p.usage
		x.totalBase, _ = p.usage(x.home, x.sessionID)
	}
	type reply struct {
		res acp.PromptResult
		err error
	}
	replied := make(chan reply, 1)
	// Ends when the agent answers or the connection closes.
	go func() {
		var r reply
		r.err = x.conn.Call(context.Background(), acp.MethodSessionPrompt, acp.PromptParams{
			SessionID: x.sessionID, Prompt: []acp.ContentBlock{{Type: "text", Text: agentkit.Prompt(x.req)}}}, &r.res)
		replied <- r
	}()
	var out turnResult
	select {
	case r := <-replied:
		x.turnEnd(r.res)
		return turnResult{stop: r.res.StopReason, err: r.err}
	case <-ctx.Done():
		out.cancelled = true
	case <-deadline:
		out.timedOut = true
	}
	// Ask the agent to stop its turn; it answers the prompt with stop
	// reason "cancelled". One that does not is stopped with its group.
	_ = x.conn.Notify(acp.MethodSessionCancel, acp.CancelParams{SessionID: x.sessionID})
	select {
	case r := <-replied:
		x.turnEnd(r.res)
		out.stop = r.res.StopReason
	case <-time.After(grace):
	}
	return out
}

var errTimeout = errors.New("timeout")

// open loads the request's session when the agent can, else starts one.
func (x *session) open(ctx context.Context, canLoad bool) (*acp.SessionResult, error) {
	servers := []acp.MCPServer{}
	if id := x.req.SessionID; id != "" && canLoad {
		x.mu.Lock()
		x.loading = true
		x.mu.Unlock()
		var res acp.SessionResult
		err := x.conn.Call(ctx, acp.MethodSessionLoad, acp.LoadSessionParams{SessionID: id, CWD: x.req.Dir, MCPServers: servers}, &res)
		x.mu.Lock()
		x.loading = false
		x.mu.Unlock()
		if err == nil {
			x.started(id)
			return &res, nil
		}
		var rpc *acp.Error
		if !errors.As(err, &rpc) {
			return nil, fmt.Errorf("session/load: %w", err)
		}
		// The session is gone (another home, a new agent version): a new
		// session gets the whole prompt, which carries the task's context.
		x.note("session/load failed, starting a new session: " + rpc.Message)
	}
	var res acp.SessionResult
	if err := x.conn.Call(ctx, acp.MethodSessionNew, acp.NewSessionParams{CWD: x.req.Dir, MCPServers: servers}, &res); err != nil {
		return nil, fmt.Errorf("session/new: %w", err)
	}
	if res.SessionID == "" || len(res.SessionID) > 200 {
		return nil, &acp.Error{Code: acp.CodeInvalidRequest, Message: "session/new returned no usable session ID"}
	}
	x.started(res.SessionID)
	return &res, nil
}

func (x *session) started(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.sessionID = id
	x.s.Session(id)
}

// choose sets the session's model (when the executor names one the agent
// offers) and the mode the preset maps the authority to (when offered).
func (x *session) choose(ctx context.Context, p *preset, spec *muster.ExecutorSpec, sres *acp.SessionResult) error {
	if m := spec.Model; m != "" && sres.Models != nil && sres.Models.CurrentModelID != m && len(sres.Models.AvailableModels) > 0 {
		var ids []string
		offered := false
		for _, mi := range sres.Models.AvailableModels {
			ids = append(ids, mi.ModelID)
			offered = offered || mi.ModelID == m
		}
		if !offered && !p.modelByEnv {
			return &acp.Error{Code: acp.CodeInvalidParams, Message: fmt.Sprintf("invalid model %q: the agent offers %s", m, agentkit.Clip(strings.Join(ids, ", "), 500))}
		}
		if offered {
			if err := x.conn.Call(ctx, acp.MethodSetModel, acp.SetModelParams{SessionID: x.sessionID, ModelID: m}, nil); err != nil {
				return fmt.Errorf("session/set_model: %w", err)
			}
		}
	}
	x.mu.Lock()
	x.s.Model = spec.Model
	x.mu.Unlock()
	if p.mode == nil || sres.Modes == nil {
		return nil
	}
	want := p.mode(x.req.Authority, x.req.Dir)
	if want == "" || want == sres.Modes.CurrentModeID {
		return nil
	}
	for _, m := range sres.Modes.AvailableModes {
		if m.ID == want {
			if err := x.conn.Call(ctx, acp.MethodSetMode, acp.SetModeParams{SessionID: x.sessionID, ModeID: want}, nil); err != nil {
				return fmt.Errorf("session/set_mode %s: %w", want, err)
			}
			return nil
		}
	}
	return nil
}

// turnEnd records the turn's message, plan and usage.
func (x *session) turnEnd(r acp.PromptResult) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.flushMessage()
	x.s.SetFinal(x.final.String())
	x.s.Done = true
	if len(x.plan) > 0 {
		var b strings.Builder
		b.WriteString("Plan:\n")
		for _, e := range x.plan {
			fmt.Fprintf(&b, "- [%s] %s\n", agentkit.Clip(e.Status, 20), agentkit.Clip(strings.TrimSpace(e.Content), 300))
		}
		x.s.Emit(muster.Record{Type: muster.RecNotes, Text: x.s.Redact(b.String())})
	}
	var u muster.Usage
	if r.Usage != nil {
		u = muster.Usage{
			InputTokens: clamp(r.Usage.InputTokens), OutputTokens: clamp(r.Usage.OutputTokens),
			CacheReadTokens: clamp(r.Usage.CachedReadTokens), CacheWriteTokens: clamp(r.Usage.CachedWriteTokens),
		}
	}
	if r.Usage == nil && r.Meta != nil && r.Meta.Quota != nil && len(r.Meta.Quota.ModelUsage) > 0 {
		// Tokens by model, as the Gemini CLI reports them; the cost
		// (when reported) goes with the first.
		for i, mu := range r.Meta.Quota.ModelUsage {
			if i >= 20 {
				break
			}
			tc := mu.TokenCount
			cached := min(clamp(tc.CachedInputTokens), clamp(tc.InputTokens))
			mu2 := muster.Usage{InputTokens: clamp(tc.InputTokens) - cached, CacheReadTokens: cached, OutputTokens: clamp(tc.OutputTokens)}
			if i == 0 && x.costSeen && x.cost > x.costBase {
				mu2.CostMicros = int64(math.Round((x.cost - x.costBase) * 1e6))
			}
			x.s.UsageRecord(agentkit.Clip(x.s.Redact(mu.Model), 100), mu2)
		}
		return
	}
	if r.Usage == nil && x.callsSeen {
		u = x.calls
	}
	if r.Usage == nil && x.total != nil {
		if t, ok := x.total(x.home, x.sessionID); ok {
			u = sub(t, x.totalBase)
		}
	}
	if x.costSeen && x.cost > x.costBase {
		u.CostMicros = int64(math.Round((x.cost - x.costBase) * 1e6))
	}
	x.s.UsageRecord("", u)
}

// maxTokens bounds one turn's reported count (a billion tokens).
const maxTokens = 1 << 30

func clamp(n int64) int64 {
	switch {
	case n < 0:
		return 0
	case n > maxTokens:
		return maxTokens
	}
	return n
}

// flushMessage emits the message chunks gathered so far as one record.
func (x *session) flushMessage() {
	if x.msg.Len() == 0 {
		return
	}
	x.s.Message(x.msg.String())
	x.msg.Reset()
}

// Notify handles the agent's notifications: session/update only.
func (x *session) Notify(method string, params json.RawMessage) {
	if method != acp.MethodSessionUpdate {
		return
	}
	var n acp.SessionNotification
	if err := json.Unmarshal(params, &n); err != nil {
		x.mu.Lock()
		x.s.Bad++
		x.mu.Unlock()
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.sessionID != "" && n.SessionID != x.sessionID {
		return
	}
	x.updates++
	if x.updates > maxUpdates {
		if !x.flooded {
			x.flooded = true
			// Stop reading the flood: the agent is stopped at once.
			go x.conn.Close(errors.New("too many session updates"))
		}
		return
	}
	u := n.Update
	if u.Kind == acp.UpdateUsage {
		if u.Cost != nil && strings.EqualFold(u.Cost.Currency, "USD") && u.Cost.Amount >= 0 && u.Cost.Amount < 1e6 {
			x.cost, x.costSeen = u.Cost.Amount, true
		}
		return
	}
	if x.loading {
		return
	}
	switch u.Kind {
	case acp.UpdateMessageChunk:
		if u.Meta != nil && u.Meta.Usage != nil {
			mu := u.Meta.Usage
			cached := min(clamp(mu.CachedReadTokens), clamp(mu.InputTokens))
			x.calls.Add(muster.Usage{InputTokens: clamp(mu.InputTokens) - cached, CacheReadTokens: cached, OutputTokens: clamp(mu.OutputTokens)})
			x.callsSeen = true
		}
		var c acp.ContentBlock
		if json.Unmarshal(u.Content, &c) == nil && c.Type == "text" {
			if strings.TrimSpace(c.Text) != "" {
				x.last = agentkit.Clip(c.Text, 2000)
			}
			if x.msg.Len() < maxMessageBuf {
				x.msg.WriteString(c.Text)
			}
			if x.final.Len() < maxMessageBuf {
				x.final.WriteString(c.Text)
			}
		}
	case acp.UpdateToolCall, acp.UpdateToolUpdate:
		x.tool(&u.ToolCall, u.Kind == acp.UpdateToolCall)
	case acp.UpdatePlan:
		x.plan = u.Entries
		if len(x.plan) > maxPlan {
			x.plan = x.plan[:maxPlan]
		}
	}
}

// toolState is what is known of one tool call.
type toolState struct {
	kind    string
	emitted bool
}

// tool emits one record per tool call, once its input is known (an
// update may bring it), and notes failed calls in the transcript.
func (x *session) tool(tc *acp.ToolCall, first bool) {
	id := tc.ToolCallID
	if id == "" {
		return
	}
	st := x.tools[id]
	if st == nil {
		if len(x.tools) >= maxTools {
			return
		}
		st = &toolState{}
		x.tools[id] = st
	}
	if tc.ToolKind != "" {
		st.kind = agentkit.Clip(tc.ToolKind, 40)
	}
	if tc.Status == "failed" {
		x.s.Note("tool call failed: " + agentkit.Clip(tc.Title, 200))
	}
	if st.emitted {
		return
	}
	hasInput := len(tc.RawInput) > 0 && string(tc.RawInput) != "null" && string(tc.RawInput) != "{}"
	final := tc.Status == "completed" || tc.Status == "failed"
	if !hasInput && !final && first {
		return // wait for an update with its input
	}
	x.flushMessage()
	st.emitted = true
	kind := st.kind
	if kind == "" {
		kind = acp.ToolOther
	}
	var args any = tc.Title
	if hasInput {
		args = string(tc.RawInput)
	}
	x.s.Tool(kind, args)
}
