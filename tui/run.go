package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/textsafe"
)

// ErrDetached is returned by Run when the user left the view with q. The
// run goes on; the caller may keep consuming events (plain lines, say).
var ErrDetached = errors.New("left the live view; the run continues")

// ErrInterrupt is returned by Run when the user pressed ctrl+c in the
// view (or the program got SIGINT): the caller should stop the run.
var ErrInterrupt = errors.New("interrupted from the live view")

// Run shows the live view on out, reading keys from in, fed with the
// events read from events. It returns nil once the channel is closed
// (the sender closes it after the run's last event), ErrDetached when the
// user pressed q, ErrInterrupt on ctrl+c, and the context's cause when
// ctx ends first. On return the terminal is restored and a short summary
// of the final state (header and task list) is written to out, since the
// view itself ran on the alternate screen.
//
// Run stops reading events when it returns; a caller that keeps the run
// going after ErrDetached must keep draining the channel itself.
func Run(ctx context.Context, events <-chan muster.Event, in io.Reader, out io.Writer, opts Options) error {
	l := Start(ctx, in, out, opts)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return l.Close()
			}
			l.Send(e)
		case <-l.Done():
			return l.Err()
		}
	}
}

// Summary returns the header and the task list as plain text, without
// colour: what Run leaves on the terminal when the view closes.
func (m Model) Summary() string {
	lines := []string{m.header()}
	iw := 0
	for _, id := range m.st.Order {
		iw = max(iw, min(24, len([]rune(textsafe.Sanitize(string(id))))))
	}
	for _, id := range m.st.Order {
		t := m.st.Tasks[id]
		line := fmt.Sprintf("  %s %s %-9s %s", stateMark[t.State], pad(textsafe.Sanitize(string(t.ID)), iw), t.State, textsafe.Sanitize(t.Title))
		if reason := textsafe.Sanitize(t.Reason); reason != "" && t.State != "succeeded" {
			line += " (" + reason + ")"
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
