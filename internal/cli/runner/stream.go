package runner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/cost"
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

// Prices returns the price table for estimated costs: the embedded one,
// or the file named by [run] prices_file.
func Prices(cfg *muster.Config) (*cost.Table, error) {
	if cfg.Run.PricesFile == "" {
		return cost.Default(), nil
	}
	t, err := cost.Load(cfg.Run.PricesFile)
	if err != nil {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("prices_file %s: %v", cfg.Run.PricesFile, err)}
	}
	return t, nil
}
