package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/muster-run/muster/internal/proc"
)

// ClientInfo is how muster names itself to agents (the version is the
// protocol client's, not the build's: agents require one).
var ClientInfo = &Implementation{Name: "muster", Title: "muster", Version: "1"}

// Handshake starts the agent argv in dir with env, sends initialize with no
// client capabilities and returns the agent's reply; then it closes the
// agent's stdin and stops it. It is how doctor learns an ACP agent's name
// and version.
func Handshake(ctx context.Context, argv []string, dir string, env []string, timeout time.Duration) (*InitializeResult, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer stdinW.Close()
	conn := NewConn(stdinW, refuseAll{})
	pctx, kill := context.WithCancel(context.Background())
	defer kill()
	var stderrMu sync.Mutex
	var stderr []string
	done := make(chan struct{})
	// Lives until the agent has exited (kill stops it at the latest).
	go func() {
		res, err := proc.Run(pctx, proc.Spec{
			Argv: argv, Dir: dir, Env: env, Stdin: stdinR, Grace: time.Second,
			OnStart: func(int) { stdinR.Close() },
			OnLine:  func(l string) { conn.Feed([]byte(l)) },
			OnStderr: func(l string) {
				stderrMu.Lock()
				defer stderrMu.Unlock()
				if len(stderr) < 5 && l != "" {
					stderr = append(stderr, l)
				}
			},
		})
		stdinR.Close()
		if err == nil {
			err = fmt.Errorf("agent exited with status %d", res.ExitCode)
		}
		conn.Close(err)
		close(done)
	}()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res InitializeResult
	err = conn.Call(cctx, MethodInitialize, InitializeParams{ProtocolVersion: ProtocolVersion, ClientInfo: ClientInfo}, &res)
	stdinW.Close()
	select {
	case <-done:
	case <-time.After(time.Second):
		kill()
		<-done
	}
	if err != nil {
		stderrMu.Lock()
		defer stderrMu.Unlock()
		if len(stderr) > 0 {
			return nil, fmt.Errorf("initialize: %w (stderr: %s)", err, stderr[0])
		}
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return &res, nil
}

// refuseAll answers every request of the agent with an error.
type refuseAll struct{}

func (refuseAll) Request(context.Context, string, json.RawMessage) (any, *Error) {
	return nil, Errorf(CodeMethodNotFound, "muster serves nothing here")
}

func (refuseAll) Notify(string, json.RawMessage) {}
