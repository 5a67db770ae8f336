package clitest

import (
	"testing"

	"github.com/muster-run/muster"
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

// errCount counts the errors a test reports instead of failing.
type errCount struct {
	testing.TB
	n int
}

func (e *errCount) Error(...any) { e.n++ }

func TestRecorderReportsOverlappingEmits(t *testing.T) {
	ec := &errCount{TB: t}
	r := &Recorder{T: ec}
	r.Emit(muster.Record{Type: muster.RecMessage})
	if ec.n != 0 {
		t.Fatal("a lone emit reported as concurrent")
	}
	r.busy.Store(true) // another Emit is under way
	r.Emit(muster.Record{Type: muster.RecUsage, Usage: muster.Usage{InputTokens: 3}})
	if ec.n != 1 {
		t.Fatalf("%d errors for an overlapping emit, want 1", ec.n)
	}
	if len(r.Of(muster.RecMessage)) != 1 || r.Usage().InputTokens != 3 {
		t.Errorf("records %+v", r.Records)
	}
}
