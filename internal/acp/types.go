package acp

import "encoding/json"

// Methods of the protocol that muster uses or serves.
const (
	MethodInitialize    = "initialize"
	MethodAuthenticate  = "authenticate"
	MethodSessionNew    = "session/new"
	MethodSessionLoad   = "session/load"
	MethodSessionPrompt = "session/prompt"
	MethodSessionCancel = "session/cancel"
	MethodSetModel      = "session/set_model"
	MethodSetMode       = "session/set_mode"
	MethodSessionUpdate = "session/update"
	MethodPermission    = "session/request_permission"
	MethodReadFile      = "fs/read_text_file"
	MethodWriteFile     = "fs/write_text_file"
	MethodTermCreate    = "terminal/create"
	MethodTermOutput    = "terminal/output"
	MethodTermWait      = "terminal/wait_for_exit"
	MethodTermKill      = "terminal/kill"
	MethodTermRelease   = "terminal/release"
)

// InitializeParams opens the connection.
type InitializeParams struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
	ClientInfo         *Implementation    `json:"clientInfo,omitempty"`
}

// ClientCapabilities are what the client serves.
type ClientCapabilities struct {
	FS       FSCapabilities `json:"fs"`
	Terminal bool           `json:"terminal"`
}

// FSCapabilities say which fs/* methods the client serves.
type FSCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

// Implementation names a client or agent.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
}

// InitializeResult is the agent's side of the handshake.
type InitializeResult struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AgentInfo         *Implementation   `json:"agentInfo,omitempty"`
	AuthMethods       []AuthMethod      `json:"authMethods,omitempty"`
}

// AgentCapabilities are what the agent supports.
type AgentCapabilities struct {
	LoadSession bool `json:"loadSession"`
}

// AuthMethod is one way the agent can authenticate.
type AuthMethod struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// NewSessionParams start a session in cwd.
type NewSessionParams struct {
	CWD        string      `json:"cwd"`
	MCPServers []MCPServer `json:"mcpServers"`
}

// MCPServer is an MCP server the agent should connect to (stdio).
type MCPServer struct {
	Name    string        `json:"name"`
	Command string        `json:"command"`
	Args    []string      `json:"args"`
	Env     []EnvVariable `json:"env"`
}

// EnvVariable is one variable of a process the agent or client starts.
type EnvVariable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// LoadSessionParams continue an earlier session.
type LoadSessionParams struct {
	SessionID  string      `json:"sessionId"`
	CWD        string      `json:"cwd"`
	MCPServers []MCPServer `json:"mcpServers"`
}

// SessionResult is the reply to session/new (and, without the ID, to
// session/load).
type SessionResult struct {
	SessionID string         `json:"sessionId"`
	Models    *SessionModels `json:"models,omitempty"`
	Modes     *SessionModes  `json:"modes,omitempty"`
}

// SessionModels are the models an agent offers (unstable in the spec).
type SessionModels struct {
	CurrentModelID  string      `json:"currentModelId"`
	AvailableModels []ModelInfo `json:"availableModels"`
}

// ModelInfo is one model on offer.
type ModelInfo struct {
	ModelID string `json:"modelId"`
	Name    string `json:"name,omitempty"`
}

// SessionModes are the modes an agent offers.
type SessionModes struct {
	CurrentModeID  string     `json:"currentModeId"`
	AvailableModes []ModeInfo `json:"availableModes"`
}

// ModeInfo is one mode on offer.
type ModeInfo struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// SetModelParams choose a session's model.
type SetModelParams struct {
	SessionID string `json:"sessionId"`
	ModelID   string `json:"modelId"`
}

// SetModeParams choose a session's mode.
type SetModeParams struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
}

// PromptParams are one user turn.
type PromptParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`
}

// ContentBlock is a piece of content; muster sends and reads text.
type ContentBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

// Stop reasons of a prompt turn.
const (
	StopEndTurn         = "end_turn"
	StopMaxTokens       = "max_tokens"
	StopMaxTurnRequests = "max_turn_requests"
	StopRefusal         = "refusal"
	StopCancelled       = "cancelled"
)

// PromptResult ends a prompt turn.
type PromptResult struct {
	StopReason string `json:"stopReason"`
	Usage      *Usage `json:"usage,omitempty"`
	Meta       *Meta  `json:"_meta,omitempty"`
}

// Meta is the part of a prompt reply's _meta muster reads: the Gemini
// CLI's (and Qwen Code's) quota, with the turn's tokens by model.
type Meta struct {
	Quota *struct {
		ModelUsage []struct {
			Model      string     `json:"model"`
			TokenCount TokenCount `json:"token_count"`
		} `json:"model_usage"`
	} `json:"quota,omitempty"`
}

// TokenCount is one model's tokens in a Meta quota.
type TokenCount struct {
	InputTokens       int64 `json:"input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
}

// Usage is a turn's token counts (unstable in the spec).
type Usage struct {
	InputTokens       int64 `json:"inputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
	CachedReadTokens  int64 `json:"cachedReadTokens"`
	CachedWriteTokens int64 `json:"cachedWriteTokens"`
	ThoughtTokens     int64 `json:"thoughtTokens"`
	TotalTokens       int64 `json:"totalTokens"`
}

// CancelParams cancel a session's turn (a notification).
type CancelParams struct {
	SessionID string `json:"sessionId"`
}

// SessionNotification carries a session/update.
type SessionNotification struct {
	SessionID string        `json:"sessionId"`
	Update    SessionUpdate `json:"update"`
}

// Session update kinds.
const (
	UpdateMessageChunk = "agent_message_chunk"
	UpdateThoughtChunk = "agent_thought_chunk"
	UpdateUserChunk    = "user_message_chunk"
	UpdateToolCall     = "tool_call"
	UpdateToolUpdate   = "tool_call_update"
	UpdatePlan         = "plan"
	UpdateUsage        = "usage_update"
)

// SessionUpdate is the union of the update kinds muster reads; other
// kinds are ignored.
type SessionUpdate struct {
	Kind string `json:"sessionUpdate"`
	// agent_message_chunk, agent_thought_chunk
	Content json.RawMessage `json:"content,omitempty"`
	// tool_call, tool_call_update
	ToolCall
	// plan
	Entries []PlanEntry `json:"entries,omitempty"`
	// _meta of a message chunk: Qwen Code's usage of one model call.
	Meta *struct {
		Usage *Usage `json:"usage"`
	} `json:"_meta,omitempty"`
	// usage_update
	Used int64 `json:"used,omitempty"`
	Size int64 `json:"size,omitempty"`
	Cost *Cost `json:"cost,omitempty"`
}

// ToolCall is a tool call or an update of one.
type ToolCall struct {
	ToolCallID string             `json:"toolCallId,omitempty"`
	Title      string             `json:"title,omitempty"`
	ToolKind   string             `json:"kind,omitempty"`
	Status     string             `json:"status,omitempty"`
	RawInput   json.RawMessage    `json:"rawInput,omitempty"`
	Locations  []ToolCallLocation `json:"locations,omitempty"`
}

// ToolCallLocation is a file a tool call touches.
type ToolCallLocation struct {
	Path string `json:"path"`
	Line *int   `json:"line,omitempty"`
}

// Tool kinds.
const (
	ToolRead       = "read"
	ToolEdit       = "edit"
	ToolDelete     = "delete"
	ToolMove       = "move"
	ToolSearch     = "search"
	ToolExecute    = "execute"
	ToolThink      = "think"
	ToolFetch      = "fetch"
	ToolSwitchMode = "switch_mode"
	ToolOther      = "other"
)

// PlanEntry is one step of an agent's plan.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority,omitempty"`
	Status   string `json:"status,omitempty"`
}

// Cost is a session's cumulative cost.
type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// PermissionParams ask the client to allow a tool call.
type PermissionParams struct {
	SessionID string             `json:"sessionId"`
	ToolCall  ToolCall           `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
}

// Permission option kinds.
const (
	AllowOnce    = "allow_once"
	AllowAlways  = "allow_always"
	RejectOnce   = "reject_once"
	RejectAlways = "reject_always"
)

// PermissionOption is one answer the agent offers.
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// PermissionResult answers a permission request.
type PermissionResult struct {
	Outcome PermissionOutcome `json:"outcome"`
}

// PermissionOutcome is "selected" with an option, or "cancelled".
type PermissionOutcome struct {
	Outcome  string `json:"outcome"`
	OptionID string `json:"optionId,omitempty"`
}

// ReadFileParams ask for a text file's content.
type ReadFileParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Line      *int   `json:"line,omitempty"`
	Limit     *int   `json:"limit,omitempty"`
}

// ReadFileResult is a text file's content.
type ReadFileResult struct {
	Content string `json:"content"`
}

// WriteFileParams write a text file.
type WriteFileParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Content   string `json:"content"`
}

// CreateTerminalParams start a command.
type CreateTerminalParams struct {
	SessionID       string        `json:"sessionId"`
	Command         string        `json:"command"`
	Args            []string      `json:"args,omitempty"`
	Env             []EnvVariable `json:"env,omitempty"`
	CWD             string        `json:"cwd,omitempty"`
	OutputByteLimit *int64        `json:"outputByteLimit,omitempty"`
}

// TerminalParams name a terminal.
type TerminalParams struct {
	SessionID  string `json:"sessionId"`
	TerminalID string `json:"terminalId"`
}

// CreateTerminalResult names the new terminal.
type CreateTerminalResult struct {
	TerminalID string `json:"terminalId"`
}

// ExitStatus is how a terminal's command ended.
type ExitStatus struct {
	ExitCode *int    `json:"exitCode"`
	Signal   *string `json:"signal"`
}

// TerminalOutputResult is a terminal's output so far.
type TerminalOutputResult struct {
	Output     string      `json:"output"`
	Truncated  bool        `json:"truncated"`
	ExitStatus *ExitStatus `json:"exitStatus,omitempty"`
}
