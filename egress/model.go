package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// requestModel returns the model a request body asks for, read as the
// provider reads it: the body must be one JSON object with nothing after
// it, and hold at most one field whose name is "model" in any case (Go's
// decoder matches field names case-insensitively and keeps the last of
// two, where a provider's may keep the first or match the exact name: a
// second spelling would let the endpoint check one model while the
// provider runs another). "" with no error: the body names no model.
func requestModel(body []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", errors.New("the request body is not a JSON object")
	}
	model, seen := "", false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", errors.New("the request body is not valid JSON")
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", errors.New("the request body is not valid JSON")
		}
		if !strings.EqualFold(key, "model") {
			continue
		}
		if seen {
			return "", errors.New("the request body names a model twice")
		}
		if err := json.Unmarshal(v, &model); err != nil {
			return "", errors.New("the request's model is not a string")
		}
		seen = true
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return "", errors.New("the request body is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", errors.New("the request body has data after its JSON object")
	}
	return model, nil
}
