package egress

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/muster-run/muster"
)

// maxUsageBody bounds what of a non-streaming response is kept to read
// its usage; maxUsageLine bounds one line of a stream.
const (
	maxUsageBody = 16 << 20
	maxUsageLine = 4 << 20
)

// meter reads the provider's usage fields from a response body as it
// passes to the agent, without holding it back: a stream line by line
// (server-sent events), any other body whole at its end.
type meter struct {
	api    API
	stream bool
	buf    bytes.Buffer
	over   bool // a line or body past its bound: not read
	// u is the usage so far; found says a usage field was seen.
	u     muster.Usage
	model string
	found bool
	// anthropic streams give input tokens at message_start and the
	// output so far at each message_delta.
	done func(m *meter)
}

// usageBody wraps a response body with a meter; done runs once at its
// end (EOF, an error or Close).
type usageBody struct {
	rc    io.ReadCloser
	m     *meter
	ended bool
}

func (b *usageBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.m.write(p[:n])
	}
	if err != nil {
		b.end()
	}
	return n, err
}

func (b *usageBody) Close() error {
	err := b.rc.Close()
	b.end()
	return err
}

func (b *usageBody) end() {
	if b.ended {
		return
	}
	b.ended = true
	if !b.m.stream && !b.m.over {
		b.m.object(b.m.buf.Bytes())
	} else if b.m.stream && b.m.buf.Len() > 0 {
		b.m.line(b.m.buf.Bytes())
	}
	b.m.done(b.m)
}

func (m *meter) write(p []byte) {
	if !m.stream {
		if m.buf.Len()+len(p) > maxUsageBody {
			m.over = true
			m.buf.Reset()
		}
		if !m.over {
			m.buf.Write(p)
		}
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if m.buf.Len()+len(p) <= maxUsageLine {
				m.buf.Write(p)
			} else {
				m.over = true
			}
			return
		}
		if !m.over && m.buf.Len()+i <= maxUsageLine {
			m.buf.Write(p[:i])
			m.line(m.buf.Bytes())
		}
		m.buf.Reset()
		m.over = false
		p = p[i+1:]
	}
}

// line reads one line of a server-sent event stream (or of a JSON-lines
// stream): its data, when it is a JSON object.
func (m *meter) line(l []byte) {
	l = bytes.TrimSpace(l)
	if d, ok := bytes.CutPrefix(l, []byte("data:")); ok {
		l = bytes.TrimSpace(d)
	}
	if len(l) == 0 || l[0] != '{' {
		return
	}
	m.object(l)
}

// wire is the union of the usage fields of the APIs muster reads.
type wire struct {
	Type    string     `json:"type"`
	Model   string     `json:"model"`
	Usage   *wireUsage `json:"usage"`
	Message *struct {
		Model string     `json:"model"`
		Usage *wireUsage `json:"usage"`
	} `json:"message"`
	Response *struct {
		Model string     `json:"model"`
		Usage *wireUsage `json:"usage"`
	} `json:"response"`
	UsageMetadata *struct {
		Prompt     int64 `json:"promptTokenCount"`
		Candidates int64 `json:"candidatesTokenCount"`
		Thoughts   int64 `json:"thoughtsTokenCount"`
		Cached     int64 `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
}

type wireUsage struct {
	// Anthropic
	InputTokens         *int64 `json:"input_tokens"`
	OutputTokens        *int64 `json:"output_tokens"`
	CacheCreationTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadTokens     int64  `json:"cache_read_input_tokens"`
	// OpenAI Responses (input_tokens, output_tokens above) and Chat
	InputDetails *struct {
		Cached int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	PromptTokens     *int64 `json:"prompt_tokens"`
	CompletionTokens *int64 `json:"completion_tokens"`
	PromptDetails    *struct {
		Cached int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func val(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// object reads the usage of one JSON object of a response.
func (m *meter) object(b []byte) {
	var w wire
	if json.Unmarshal(b, &w) != nil {
		return
	}
	switch m.api {
	case Anthropic:
		m.anthropic(&w)
	case Gemini:
		if w.UsageMetadata != nil {
			um := w.UsageMetadata
			m.found = true
			m.u = muster.Usage{InputTokens: um.Prompt - um.Cached, CacheReadTokens: um.Cached, OutputTokens: um.Candidates + um.Thoughts}
			if w.ModelVersion != "" {
				m.model = w.ModelVersion
			}
		}
	default:
		m.openai(&w)
	}
}

func (m *meter) anthropic(w *wire) {
	u, model := w.Usage, w.Model
	if w.Message != nil {
		u, model = w.Message.Usage, w.Message.Model // message_start
	}
	if model != "" {
		m.model = model
	}
	if u == nil {
		return
	}
	m.found = true
	if u.InputTokens != nil || w.Type == "message_start" || !m.stream {
		m.u.InputTokens = val(u.InputTokens)
		m.u.CacheWriteTokens = u.CacheCreationTokens
		m.u.CacheReadTokens = u.CacheReadTokens
	}
	if u.OutputTokens != nil {
		m.u.OutputTokens = *u.OutputTokens // cumulative in a stream
	}
}

func (m *meter) openai(w *wire) {
	u, model := w.Usage, w.Model
	if w.Response != nil {
		u, model = w.Response.Usage, w.Response.Model // response.completed
	}
	if model != "" {
		m.model = model
	}
	if u == nil {
		return
	}
	var cached int64
	if u.InputDetails != nil {
		cached = u.InputDetails.Cached
	}
	if u.PromptDetails != nil {
		cached = u.PromptDetails.Cached
	}
	in, out := val(u.InputTokens), val(u.OutputTokens)
	if u.PromptTokens != nil || u.CompletionTokens != nil {
		in, out = val(u.PromptTokens), val(u.CompletionTokens)
	}
	m.found = true
	m.u = muster.Usage{InputTokens: max(in-cached, 0), CacheReadTokens: cached, OutputTokens: out}
}
