package driver

import (
	"errors"

	"github.com/muster-run/muster"
)

// The journal's group commit: events are written as they come and made
// durable by one sync before anything outside the process depends on
// them (ARCHITECTURE §2.7, §4 "Loop").

// flush makes pending worker events durable and applies them. The
// pending slice holds pointers into the workers' messages (an event is
// about 600 bytes: copied once per group it was most of the loop's
// allocation), and is reused from group to group.
func (d *Driver) flush() error {
	if len(d.pending) == 0 {
		return nil
	}
	evs := d.pending
	err := d.emitPtrs(evs)
	clear(evs) // the events are the state's and OnEvent's now
	d.pending = evs[:0]
	return err
}

// emit stamps events, writes them to the journal, then applies them in
// order (emitPtrs).
func (d *Driver) emit(evs ...muster.Event) error {
	if len(evs) == 0 {
		return nil
	}
	ptrs := make([]*muster.Event, len(evs))
	for i := range evs {
		ptrs[i] = &evs[i]
	}
	return d.emitPtrs(ptrs)
}

// emitPtrs is emit of the events ptrs points to; it keeps the events,
// not the slice. With a group-commit journal the events are durable only
// after the next sync, which the loop makes before anything outside the
// process depends on them (a worker starts, a lease is granted, Run
// returns). Applying first is safe: a crash before the sync loses the
// events and the in-memory state together.
func (d *Driver) emitPtrs(ptrs []*muster.Event) error {
	now := d.clock.Now().UTC()
	for _, e := range ptrs {
		if e.Time.IsZero() {
			e.Time = now
		}
		d.redactEvent(e)
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
