package agenttest

import (
	"testing"

	"github.com/muster-run/muster/mockllm"
)

func TestScripts(t *testing.T) {
	if _, err := mockllm.LoadScript("testdata/capture.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := Script().Validate(); err != nil {
		t.Fatal(err)
	}
}
