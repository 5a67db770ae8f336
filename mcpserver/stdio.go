package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine bounds one JSON-RPC message on stdin (as the SDK's default).
const maxLine = mcp.DefaultMaxLineLength

// Serve runs the server on stdin and stdout until the client goes.
func Serve(ctx context.Context, b Backend, version string) error {
	out := &lockedWriter{w: os.Stdout}
	return New(b, version).Run(ctx, &mcp.IOTransport{Reader: filter(os.Stdin, out, maxLine), Writer: out})
}

// filter passes on the lines of in that are JSON-RPC messages and answers
// any other line with a JSON-RPC parse error on out, so that a client's
// garbage line costs it one error, not the session (the SDK closes the
// connection on a line it cannot decode). A line longer than limit is
// answered the same way and skipped.
func filter(in io.Reader, out io.Writer, limit int) io.ReadCloser {
	pr, pw := io.Pipe()
	// The goroutine lives until in ends or the server closes its end of
	// the pipe (a write then fails).
	go func() {
		br := bufio.NewReaderSize(in, 64<<10)
		for {
			line, tooLong, err := readLine(br, limit)
			if len(bytes.TrimSpace(line)) > 0 || tooLong {
				if why := check(line, tooLong, limit); why != "" {
					if werr := parseError(out, why); werr != nil {
						_ = pw.CloseWithError(werr)
						return
					}
				} else if _, werr := pw.Write(append(line, '\n')); werr != nil {
					return
				}
			}
			if err != nil {
				_ = pw.CloseWithError(err) // io.EOF: the client is gone
				return
			}
		}
	}()
	return pr
}

// readLine reads one line without its newline; past limit it drops the
// rest of the line and says so.
func readLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			line = append(line, chunk...)
			if len(line) > limit {
				line, tooLong = nil, true
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, err
	}
}

// check says why a line is not a JSON-RPC 2.0 message ("" when it is
// one, or a batch of them).
func check(line []byte, tooLong bool, limit int) string {
	if tooLong {
		return fmt.Sprintf("a message longer than %d bytes", limit)
	}
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		return "not JSON"
	}
	if line[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(line, &batch) != nil || len(batch) == 0 {
			return "not a batch of JSON-RPC 2.0 messages"
		}
		for _, one := range batch {
			if why := message(one); why != "" {
				return "a batch member is " + why
			}
		}
		return ""
	}
	return message(line)
}

// message says why a JSON value is not one JSON-RPC 2.0 message.
func message(line []byte) string {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || m.JSONRPC != "2.0" || (m.Method == "" && m.Result == nil && m.Error == nil) {
		return `not a JSON-RPC 2.0 message (an object with "jsonrpc": "2.0" and a method, result or error)`
	}
	id := bytes.TrimSpace(m.ID)
	switch {
	case len(id) == 0 || string(id) == "null":
		if m.Method == "" {
			return "a response without an id"
		}
	case id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9'):
		return "a message whose id is neither a string nor a number"
	}
	// What the SDK would refuse, and end the session over.
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return "not a JSON-RPC 2.0 message the server can read: " + err.Error()
	}
	return ""
}

func parseError(w io.Writer, why string) error {
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -32700, "message": "parse error: " + why}})
	if err != nil {
		return err
	}
	_, err = w.Write(append(msg, '\n'))
	return err
}

// lockedWriter serialises whole writes: the SDK writes a message and its
// newline in one call, and so does filter.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close does nothing: stdout stays open for the process.
func (l *lockedWriter) Close() error { return nil }
