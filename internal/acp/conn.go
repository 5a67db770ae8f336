// Package acp speaks the Agent Client Protocol (ACP, version 1) from the
// client's side: JSON-RPC 2.0, one message a line, over an agent's stdin
// and stdout. It holds the connection (calls, notifications, the agent's
// own requests) and the protocol's types; what muster does with a session
// lives in agent/acp, and doctor uses Handshake to ask an agent who it is.
package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// ProtocolVersion is the ACP version muster speaks.
const ProtocolVersion = 1

// Bounds on what an agent may send.
const (
	// MaxMessage bounds one message in bytes; internal/proc cuts longer
	// lines, which then fail to decode.
	MaxMessage = 4 << 20
	// MaxInFlight bounds the agent's requests served at once; past it a
	// request gets an error.
	MaxInFlight = 16
	// writeTimeout bounds one write to an agent that does not read.
	writeTimeout = 30 * time.Second
)

// JSON-RPC and ACP error codes.
const (
	CodeParse          = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	CodeAuthRequired   = -32000
	CodeNotFound       = -32002
)

// Message is one JSON-RPC message in either direction.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error returns the message with its code, and the data when there is any
// (agents put the upstream API's error there).
func (e *Error) Error() string {
	s := fmt.Sprintf("%s (code %d)", e.Message, e.Code)
	if len(e.Data) > 0 && string(e.Data) != "null" {
		d := string(e.Data)
		if len(d) > 1000 {
			d = d[:1000]
		}
		s += ": " + d
	}
	return s
}

// Errorf is an error reply of code.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Handler serves the agent's requests (Request) and notifications
// (Notify). Notifications are handled in order, on the reading
// goroutine; requests each on their own goroutine, at most MaxInFlight at
// once.
type Handler interface {
	Request(ctx context.Context, method string, params json.RawMessage) (any, *Error)
	Notify(method string, params json.RawMessage)
}

// ErrClosed is the cause of calls cut short by Close.
var ErrClosed = errors.New("acp: connection closed")

// Conn is the client's end of one agent connection. Feed it every line the
// agent prints; it writes to w.
type Conn struct {
	w       io.Writer
	handler Handler
	wmu     sync.Mutex

	mu       sync.Mutex
	next     int64
	pending  map[int64]chan *Message
	closed   error
	inFlight int
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	// Bad counts lines that were not JSON-RPC messages.
	Bad int
}

// NewConn returns a connection writing to w (an *os.File gets write
// deadlines) and serving the agent's requests with h.
func NewConn(w io.Writer, h Handler) *Conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &Conn{w: w, handler: h, pending: map[int64]chan *Message{}, ctx: ctx, cancel: cancel}
}

type deadliner interface{ SetWriteDeadline(time.Time) error }

func (c *Conn) write(m *Message) error {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if d, ok := c.w.(deadliner); ok {
		_ = d.SetWriteDeadline(time.Now().Add(writeTimeout))
	}
	_, err = c.w.Write(b)
	return err
}

// Call sends a request and waits for its response, ctx, or Close. A
// JSON-RPC error reply is returned as *Error.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed != nil {
		c.mu.Unlock()
		return c.closed
	}
	c.next++
	id := c.next
	ch := make(chan *Message, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	if err := c.write(&Message{ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method, Params: p}); err != nil {
		return fmt.Errorf("acp: send %s: %w", method, err)
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case m := <-ch:
		if m == nil {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.closed
		}
		if m.Error != nil {
			return m.Error
		}
		if result != nil && len(m.Result) > 0 && string(m.Result) != "null" {
			if err := json.Unmarshal(m.Result, result); err != nil {
				return fmt.Errorf("acp: %s: bad result: %w", method, err)
			}
		}
		return nil
	}
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.write(&Message{Method: method, Params: p})
}

// Feed handles one line the agent printed. It reports whether the line
// was a JSON-RPC message.
func (c *Conn) Feed(line []byte) bool {
	var m Message
	if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
		c.Bad++
		return false
	}
	switch {
	case m.Method != "" && len(m.ID) > 0:
		c.serve(&m)
	case m.Method != "":
		c.handler.Notify(m.Method, m.Params)
	case len(m.ID) > 0:
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		if err != nil {
			c.Bad++
			return false
		}
		// Sent under the lock, so that Close cannot close ch meanwhile.
		c.mu.Lock()
		ch, ok := c.pending[id]
		if ok {
			select {
			case ch <- &m:
			default: // a second response to one request
				ok = false
			}
		}
		c.mu.Unlock()
		if !ok {
			c.Bad++ // a response to nothing muster asked, or a second one
			return false
		}
	default:
		c.Bad++
		return false
	}
	return true
}

// serve answers one request of the agent on its own goroutine.
func (c *Conn) serve(m *Message) {
	c.mu.Lock()
	if c.closed != nil {
		c.mu.Unlock()
		return
	}
	if c.inFlight >= MaxInFlight {
		c.mu.Unlock()
		_ = c.write(&Message{ID: m.ID, Error: Errorf(CodeInternal, "too many requests at once (at most %d)", MaxInFlight)})
		return
	}
	c.inFlight++
	c.wg.Add(1)
	c.mu.Unlock()
	// Lives until the handler returns; Close cancels its context.
	go func() {
		defer c.wg.Done()
		res, rerr := c.handler.Request(c.ctx, m.Method, m.Params)
		// The slot is free once the handler returns, before the reply goes
		// out: an agent that sends its next request on reading this reply
		// must find it free.
		c.mu.Lock()
		c.inFlight--
		c.mu.Unlock()
		reply := &Message{ID: m.ID, Error: rerr}
		if rerr == nil {
			b, err := json.Marshal(res)
			if err != nil {
				reply.Error = Errorf(CodeInternal, "%v", err)
			} else {
				reply.Result = b
			}
		}
		_ = c.write(reply)
	}()
}

// Close fails every pending call with err (nil: ErrClosed), cancels the
// requests being served and waits for them.
func (c *Conn) Close(err error) {
	if err == nil {
		err = ErrClosed
	}
	c.mu.Lock()
	if c.closed == nil {
		c.closed = err
		for id, ch := range c.pending {
			close(ch)
			delete(c.pending, id)
		}
	}
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}
