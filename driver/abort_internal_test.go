package driver

import (
	"context"
	"errors"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// A worker waiting for a reviewer clone or for its splice when the
// journal fails gets an answer, so abort (which waits for every worker)
// returns.
func TestAbortAnswersWaitingWorkers(t *testing.T) {
	d := &Driver{msgs: make(chan message, 4), cancels: map[muster.TaskID]context.CancelCauseFunc{}}
	leased := make(chan engine.Lease, 1)
	spliced := make(chan error, 1)
	d.wg.Add(2)
	go func() {
		defer d.wg.Done()
		reply := make(chan engine.Lease, 1)
		d.msgs <- message{lease: &leaseRequest{task: "a", role: muster.RoleReviewer, reply: reply}}
		leased <- <-reply
	}()
	go func() {
		defer d.wg.Done()
		reply := make(chan error, 1)
		d.msgs <- message{splice: &spliceRequest{parent: &muster.Task{ID: "b"}, reply: reply}}
		spliced <- <-reply
	}()
	d.abort()
	if l := <-leased; l.Executor != "" {
		t.Errorf("lease %+v after a journal failure, want none", l)
	}
	if err := <-spliced; !errors.Is(err, errJournal) {
		t.Errorf("splice answered %v, want the journal failure", err)
	}
}
