package suggest

import "testing"

func TestDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"owns", "owns", 0},
		{"owms", "owns", 1},
		{"ownz", "owns", 1},
		{"onws", "owns", 1}, // transposition
		{"gate", "gates", 1},
		{"kitten", "sitting", 3},
		{"", "abc", 3},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestNearest(t *testing.T) {
	t.Parallel()
	keys := []string{"After", "Owns", "Reads", "Gate", "Executor", "Timeout"}
	for _, tc := range []struct{ word, want string }{
		{"Owms", "Owns"},
		{"afetr", "After"},
		{"Executer", "Executor"},
		{"gates", "Gate"},
		{"banana", ""},
		{"x", ""},
		{"Exec", "Executor"},
		{"ti", ""},
		{"Rnu", ""},
	} {
		if got := Nearest(tc.word, keys); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
	if got := Nearest("a", nil); got != "" {
		t.Errorf("Nearest with no candidates = %q", got)
	}
}
