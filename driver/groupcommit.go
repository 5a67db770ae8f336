package driver

import (
	"errors"

	"github.com/muster-run/muster"
)

// The journal's group commit: events are written as they come and made
// durable by one sync before anything outside the process depends on
// them (ARCHITECTURE §2.7, §4 "Loop").

// flush makes pending worker events durable and applies them.
func (d *Driver) flush() error {
	if len(d.pending) == 0 {
		return nil
	}
	evs := d.pending
	d.pending = nil
	return d.emit(evs...)
}

// emit stamps events, writes them to the journal, then applies them in
// order. With a group-commit journal the events are durable only after
// the next sync, which the loop makes before anything outside the process
// depends on them (a worker starts, a lease is granted, Run returns).
// Applying first is safe: a crash before the sync loses the events and
// the in-memory state together.
func (d *Driver) emit(evs ...muster.Event) error {
	if len(evs) == 0 {
		return nil
	}
	now := d.clock.Now().UTC()
	ptrs := make([]*muster.Event, len(evs))
	for i := range evs {
		if evs[i].Time.IsZero() {
			evs[i].Time = now
		}
		d.redactEvent(&evs[i])
		ptrs[i] = &evs[i]
	}
	if g, ok := d.opts.Journal.(groupJournal); ok {
		if err := g.Write(ptrs); err != nil {
			return &muster.Error{Code: muster.CodeInternal, Op: "journal", Err: err}
		}
		d.unsynced = true
		if d.crash != nil {
			for _, e := range ptrs {
				d.crash.at(string(e.Type))
			}
		}
	} else {
		for _, e := range ptrs {
			if err := d.opts.Journal.Append(e); err != nil {
				return &muster.Error{Code: muster.CodeInternal, Op: "journal", Err: err}
			}
		}
	}
	for _, e := range ptrs {
		if err := d.state.Apply(e); err != nil {
			return &muster.Error{Code: muster.CodeInternal, Op: "apply event", Err: err}
		}
		d.observe(e)
	}
	if d.opts.OnEvent != nil {
		if d.unsynced {
			d.unseen = append(d.unseen, ptrs...)
		} else {
			for _, e := range ptrs {
				d.opts.OnEvent(e, d.state)
			}
		}
	}
	return d.budget(ptrs)
}

// sync makes written events durable, then answers the workers waiting
// for that (message.durable).
func (d *Driver) sync() error {
	if d.unsynced {
		if err := d.opts.Journal.(groupJournal).Sync(); err != nil {
			d.unseen = nil // never durable: never shown
			d.answer(errors.Join(errJournal, err))
			return &muster.Error{Code: muster.CodeInternal, Op: "journal", Err: err}
		}
		d.unsynced = false
	}
	// Only now do the stream and the views see what was written.
	for _, e := range d.unseen {
		d.opts.OnEvent(e, d.state)
	}
	d.unseen = nil
	d.answer(nil)
	return nil
}

// answer replies to every worker waiting for a sync.
func (d *Driver) answer(err error) {
	for _, w := range d.waiters {
		w <- err
	}
	d.waiters = nil
}
