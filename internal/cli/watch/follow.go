package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"time"

	"github.com/muster-run/muster"
)

// Follow reads the journal at path and sends its events on out: first
// what the file holds, then each line appended to it, polling every
// interval. A last line without its newline is a write in progress: it is
// held until it completes. Follow returns nil after sending a
// RunFinished or RunInterrupted that is the journal's last line (a later
// resume appends RunResumed after it, so an end in the middle is passed
// through), and the context's cause when ctx ends first. It does not
// close out.
func Follow(ctx context.Context, path string, interval time.Duration, out chan<- muster.Event) error {
	f, err := os.Open(path)
	if err != nil {
		return muster.Errorf(muster.CodeInternal, "watch: %w", err)
	}
	defer f.Close()
	var (
		pending []byte // bytes read after the last newline
		line    int    // lines decoded so far
		ended   bool   // the last event decoded ended the run
		buf     = make([]byte, 64<<10)
	)
	for {
		n, rerr := f.Read(buf)
		if n > 0 {
			pending = append(pending, buf[:n]...)
			for {
				i := bytes.IndexByte(pending, '\n')
				if i < 0 {
					break
				}
				raw := bytes.TrimSpace(pending[:i])
				pending = pending[i+1:]
				line++
				if len(raw) == 0 {
					continue
				}
				var e muster.Event
				if err := json.Unmarshal(raw, &e); err != nil {
					return muster.Errorf(muster.CodeInternal, "%s:%d: not a journal event: %w", path, line, err)
				}
				ended = e.Type == muster.EvRunFinished || e.Type == muster.EvRunInterrupted
				select {
				case out <- e:
				case <-ctx.Done():
					return context.Cause(ctx)
				}
			}
			// Compact the pending slice so it does not grow without bound.
			pending = append([]byte(nil), pending...)
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return muster.Errorf(muster.CodeInternal, "watch: read %s: %w", path, rerr)
		}
		if n == 0 || errors.Is(rerr, io.EOF) {
			// At the end of what is written so far.
			if ended && len(pending) == 0 {
				return nil
			}
			t := time.NewTimer(interval)
			select {
			case <-ctx.Done():
				t.Stop()
				return context.Cause(ctx)
			case <-t.C:
			}
		}
	}
}
