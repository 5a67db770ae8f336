package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestFilter(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		"garbage",
		"",
		strings.Repeat("x", 300), // too long
		`{"jsonrpc":"1.0","id":2,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":3,"method":"ping"}]`,
		"[1, 2]",
		"[]",
		`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","result":1}`,
		`{"jsonrpc":"2.0","id":"s","method":"ping"}`,
		`{"jsonrpc":"2.0","id":8,"error":"x"}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		"\r",
		`{"jsonrpc":"2.0","id":4,"result":{}}` + "\r",
	}, "\n") // no final newline: the last line still counts
	var errs bytes.Buffer
	got, err := io.ReadAll(filter(strings.NewReader(in), &errs, 100))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + `[{"jsonrpc":"2.0","id":3,"method":"ping"}]` + "\n" +
		`{"jsonrpc":"2.0","id":"s","method":"ping"}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"result":{}}` + "\n"
	if string(got) != want {
		t.Errorf("passed on:\n%s\nwant:\n%s", got, want)
	}
	e := errs.String()
	if strings.Count(e, `"code":-32700`) != 10 || !strings.Contains(e, "not JSON") || !strings.Contains(e, "longer than 100 bytes") || !strings.Contains(e, "not a JSON-RPC 2.0 message") || !strings.Contains(e, "a batch member is not") {
		t.Errorf("errors:\n%s", e)
	}
}

// Every line filter passes on is one the SDK can decode: no input ends
// the session.
func FuzzFilter(f *testing.F) {
	for _, s := range []string{"garbage", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `[{"jsonrpc":"2.0","id":1e400}]`,
		`{"jsonrpc":"2.0","id":8,"error":"x"}`, "\x00\xff\n[]", `{"jsonrpc":"2.0","result":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var errs bytes.Buffer
		out, err := io.ReadAll(filter(strings.NewReader(in), &errs, 1<<10))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
			if line == "" {
				continue
			}
			members := []json.RawMessage{json.RawMessage(line)}
			if strings.HasPrefix(strings.TrimSpace(line), "[") {
				if err := json.Unmarshal([]byte(line), &members); err != nil {
					t.Fatalf("passed a bad batch %q: %v", line, err)
				}
			}
			for _, m := range members {
				if _, err := jsonrpc.DecodeMessage(m); err != nil {
					t.Fatalf("passed %q, which the SDK refuses: %v", line, err)
				}
			}
		}
	})
}
