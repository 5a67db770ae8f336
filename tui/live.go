package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	tea "charm.land/bubbletea/v2"

	"github.com/muster-run/muster"
)

// Live is a live view running in its own goroutines, fed one event at a
// time by Send. It suits a driver's synchronous event callback: Send never
// waits for the screen.
//
//	live := tui.Start(ctx, os.Stdin, os.Stderr, tui.Options{OnInterrupt: stopRun})
//	onEvent := func(e *muster.Event) {
//		if live.Active() {
//			live.Send(*e)
//		} else {
//			plain.Print(*e) // after q, the run goes on in plain lines
//		}
//	}
//	... run ...
//	err := live.Close() // nil, ErrDetached or ErrInterrupt
type Live struct {
	p    *tea.Program
	opts Options

	mu     sync.Mutex
	queue  []muster.Event // events not yet handed to the program
	closed bool           // Close was called: no more events
	wake   chan struct{}  // cap 1: the queue changed

	done chan struct{} // closed when the program has ended
	err  error         // set before done closes
}

// Start shows the live view on out, reading keys from in, until Close is
// called and the view has drawn the last event, or the user leaves it
// (q: ErrDetached) or interrupts (ctrl+c: ErrInterrupt, after calling
// opts.OnInterrupt). When ctx ends the view ends too. On exit the
// terminal is restored and a short summary (header and task list) is
// written to out, since the view ran on the alternate screen.
func Start(ctx context.Context, in io.Reader, out io.Writer, opts Options) *Live {
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out)}
	if opts.Width > 0 && opts.Height > 0 {
		popts = append(popts, tea.WithWindowSize(opts.Width, opts.Height))
	}
	l := &Live{opts: opts, wake: make(chan struct{}, 1), done: make(chan struct{})}
	l.p = tea.NewProgram(New(opts), popts...)
	// The program goroutine ends when the view quits; it closes l.done.
	go l.run(ctx, out)
	// The pump goroutine hands queued events to the program, in order,
	// and ends after the last one (or when the program has ended).
	go l.pump()
	return l
}

func (l *Live) run(ctx context.Context, out io.Writer) {
	defer close(l.done)
	final, err := l.p.Run()
	fm, ok := final.(Model)
	if ok {
		fmt.Fprintln(out, fm.Summary())
	}
	switch {
	case ok && fm.stopped, errors.Is(err, tea.ErrInterrupted):
		l.err = ErrInterrupt
		if l.opts.OnInterrupt != nil {
			l.opts.OnInterrupt()
		}
	case ok && fm.detached:
		l.err = ErrDetached
		line := l.opts.Detached
		if line == "" {
			line = DetachedLine
		}
		fmt.Fprintln(out, line)
	case ctx.Err() != nil:
		l.err = context.Cause(ctx)
	case err != nil:
		l.err = fmt.Errorf("live view: %w", err)
	}
}

func (l *Live) pump() {
	for {
		l.mu.Lock()
		batch, closed := l.queue, l.closed
		l.queue = nil
		l.mu.Unlock()
		for _, e := range batch {
			select {
			case <-l.done:
				return
			default:
			}
			l.p.Send(EventMsg{e})
		}
		if closed && len(batch) == 0 {
			l.p.Send(closedMsg{})
			return
		}
		if len(batch) > 0 {
			continue // more may have come meanwhile
		}
		select {
		case <-l.wake:
		case <-l.done:
			return
		}
	}
}

// Send queues an event for the view. It never blocks; after the view has
// ended (see Active) events are dropped.
func (l *Live) Send(e muster.Event) {
	l.mu.Lock()
	if !l.closed && l.Active() {
		l.queue = append(l.queue, e)
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Active reports whether the view is still on the screen.
func (l *Live) Active() bool {
	select {
	case <-l.done:
		return false
	default:
		return true
	}
}

// Done is closed when the view has ended.
func (l *Live) Done() <-chan struct{} { return l.done }

// Err returns why the view ended (see Close); nil while it runs.
func (l *Live) Err() error {
	select {
	case <-l.done:
		return l.err
	default:
		return nil
	}
}

// Close says no more events will come, waits for the view to draw the
// ones queued and end, and returns nil, ErrDetached (the user pressed q),
// ErrInterrupt (ctrl+c) or the context's cause.
func (l *Live) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	<-l.done
	return l.err
}

// Interactive reports whether the live view can run on these streams:
// both are terminals, CI is not set and TERM is not dumb. Otherwise show
// plain progress lines.
func Interactive(in io.Reader, out io.Writer) bool {
	if os.Getenv("CI") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return isTerminal(in) && isTerminal(out)
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
