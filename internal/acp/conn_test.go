package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// agent is the far end of a Conn in tests: it reads what the client
// writes.
type agent struct {
	r   *bufio.Scanner
	out chan Message
}

func newPair(t *testing.T, h Handler) (*Conn, *agent) {
	pr, pw := io.Pipe()
	c := NewConn(pw, h)
	a := &agent{r: bufio.NewScanner(pr), out: make(chan Message, 64)}
	go func() {
		for a.r.Scan() {
			var m Message
			if json.Unmarshal(a.r.Bytes(), &m) == nil {
				a.out <- m
			}
		}
		close(a.out)
	}()
	t.Cleanup(func() { pw.Close(); c.Close(nil) })
	return c, a
}

func (a *agent) next(t *testing.T) Message {
	select {
	case m := <-a.out:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("nothing written")
	}
	return Message{}
}

type recorder struct {
	mu      sync.Mutex
	notes   []string
	block   chan struct{}
	serving int
}

func (r *recorder) Request(ctx context.Context, method string, _ json.RawMessage) (any, *Error) {
	if method == "block" {
		r.mu.Lock()
		r.serving++
		r.mu.Unlock()
		select {
		case <-r.block:
		case <-ctx.Done():
		}
		return nil, Errorf(CodeInternal, "done")
	}
	return map[string]string{"echo": method}, nil
}

func (r *recorder) Notify(method string, _ json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, method)
}

func TestCallResultAndError(t *testing.T) {
	c, a := newPair(t, &recorder{})
	type res struct {
		V int `json:"v"`
	}
	done := make(chan error, 2)
	var got res
	go func() { done <- c.Call(context.Background(), "m1", map[string]int{"x": 1}, &got) }()
	m := a.next(t)
	if m.Method != "m1" || m.JSONRPC != "2.0" || string(m.ID) != "1" {
		t.Fatalf("sent %+v", m)
	}
	c.Feed([]byte(`{"jsonrpc":"2.0","id":1,"result":{"v":7}}`))
	if err := <-done; err != nil || got.V != 7 {
		t.Fatalf("err %v, got %+v", err, got)
	}
	go func() { done <- c.Call(context.Background(), "m2", nil, nil) }()
	a.next(t)
	c.Feed([]byte(`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"Authentication required"}}`))
	var rpc *Error
	if err := <-done; !errors.As(err, &rpc) || rpc.Code != CodeAuthRequired {
		t.Fatalf("err %v", err)
	}
	// A response to nothing asked, and a second one, are not messages.
	if c.Feed([]byte(`{"jsonrpc":"2.0","id":99,"result":{}}`)) || c.Feed([]byte(`{"jsonrpc":"2.0","id":2,"result":{}}`)) {
		t.Error("a stray response was taken")
	}
	if c.Feed([]byte(`not json`)) || c.Feed([]byte(`{"id":1}`)) || c.Bad != 4 {
		t.Errorf("bad lines %d", c.Bad)
	}
}

func TestRequestsAndNotifications(t *testing.T) {
	h := &recorder{block: make(chan struct{})}
	c, a := newPair(t, h)
	c.Feed([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{}}`))
	c.Feed([]byte(`{"jsonrpc":"2.0","id":"a","method":"fs/read_text_file","params":{}}`))
	m := a.next(t)
	if string(m.ID) != `"a"` || !strings.Contains(string(m.Result), "fs/read_text_file") {
		t.Fatalf("reply %+v", m)
	}
	// At most MaxInFlight requests are served at once; the next is refused.
	for i := 0; i < MaxInFlight; i++ {
		c.Feed([]byte(`{"jsonrpc":"2.0","id":` + string(rune('0'+i%10)) + `,"method":"block"}`))
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.mu.Lock()
		n := h.serving
		h.mu.Unlock()
		if n == MaxInFlight || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Feed([]byte(`{"jsonrpc":"2.0","id":"over","method":"block"}`))
	m = a.next(t)
	if string(m.ID) != `"over"` || m.Error == nil || !strings.Contains(m.Error.Message, "too many") {
		t.Fatalf("reply past the bound %+v", m)
	}
	close(h.block)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.notes) != 1 || h.notes[0] != "session/update" {
		t.Errorf("notifications %v", h.notes)
	}
}

func TestCloseFailsPendingCalls(t *testing.T) {
	c, a := newPair(t, &recorder{})
	done := make(chan error, 1)
	go func() { done <- c.Call(context.Background(), "m", nil, nil) }()
	a.next(t)
	cause := errors.New("the agent exited")
	c.Close(cause)
	if err := <-done; !errors.Is(err, cause) {
		t.Fatalf("err %v", err)
	}
	if err := c.Call(context.Background(), "after", nil, nil); !errors.Is(err, cause) {
		t.Fatalf("call after close: %v", err)
	}
}
