// Package mockllmtest starts the mock model server of package mockllm for
// a test. It lives apart from mockllm so that the muster binary, which
// serves the mock with `muster mock-llm`, does not link package testing.
package mockllmtest

import (
	"testing"

	"github.com/muster-run/muster/mockllm"
)

// Start serves script on a free loopback port until the test ends.
func Start(t testing.TB, script *mockllm.Script) *mockllm.Server {
	t.Helper()
	s, err := mockllm.Listen("127.0.0.1:0", script, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
