package runner

import (
	"bufio"
	"encoding/json"
	"io"

	"github.com/muster-run/muster"
)

// jsonStream writes events as JSON lines (the journal's own form).
type jsonStream struct {
	w   *bufio.Writer
	enc *json.Encoder
}

func newJSONStream(w io.Writer) *jsonStream {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &jsonStream{w: bw, enc: enc}
}

func (s *jsonStream) write(e *muster.Event) {
	_ = s.enc.Encode(e)
	_ = s.w.Flush()
}
