package fleet

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
)

// bundleTry bounds one request for a job's start bundle. An orchestrator
// killed after it took a request never answers it; the one resumed in its
// place answers the request asked again.
var bundleTry = 10 * time.Second

// askBundle asks for a bundle, again after each bundleTry without an
// answer, until ctx ends, and takes the first answer to any of its asks
// on one inbox (an orchestrator slower than bundleTry is not asked in
// vain). No responder at all (no orchestrator runs) is an answer: the
// job fails at once, as before.
func (w *Worker) askBundle(ctx context.Context, subject string, req []byte) (*nats.Msg, error) {
	nc := w.o.Conn.NC
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	for {
		if err := nc.PublishRequest(subject, inbox, req); err != nil {
			return nil, err
		}
		tctx, cancel := context.WithTimeout(ctx, bundleTry)
		m, err := sub.NextMsgWithContext(tctx)
		cancel()
		switch {
		case err == nil && len(m.Data) == 0 && m.Header.Get("Status") == "503":
			return nil, nats.ErrNoResponders
		case err == nil:
			return m, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case !errors.Is(err, context.DeadlineExceeded):
			return nil, err
		}
	}
}
