package journal

import (
	"reflect"
	"strings"
	"testing"
)

type selfMarshaled string

func (selfMarshaled) MarshalText() ([]byte, error) { return []byte("other"), nil }

// TestShapeSeesSelfMarshalingTypes (red team): a type of an event's
// field that gains its own MarshalJSON or MarshalText (muster.TaskID,
// say) keeps its name and kind, but encoding/json then writes what the
// method says, which the fast encoder does not: the shape must change,
// so that every event falls back to encoding/json.
func TestShapeSeesSelfMarshalingTypes(t *testing.T) {
	type plain struct {
		A string `json:"a"`
	}
	type marked struct {
		A selfMarshaled `json:"a"`
	}
	if s := shapeOf(reflect.TypeFor[marked]()); !strings.Contains(s, "marshals") {
		t.Errorf("shape %q does not say the field marshals itself", s)
	}
	if s := shapeOf(reflect.TypeFor[plain]()); strings.Contains(s, "marshals") {
		t.Errorf("shape %q", s)
	}
}
