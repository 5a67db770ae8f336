package owns

import "testing"

func TestNormalize(t *testing.T) {
	good := map[string]string{
		"a.go":         "a.go",
		"./dir/":       "dir/",
		"dir//x/y/":    "dir/x/y/",
		"src/**/*.go":  "src/**/*.go",
		" internal/x ": "internal/x",
		"a\\b.go":      "a/b.go",
	}
	for in, want := range good {
		got, err := Normalize(in)
		if err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "/etc/passwd", "../x", "a/../../x", "a/../b", ".", "C:/x", "[a"} {
		if got, err := Normalize(in); err == nil {
			t.Errorf("Normalize(%q) = %q, want error", in, got)
		}
	}
}

func TestMatch(t *testing.T) {
	entries := []string{"a.go", "dir/", "src/**/*.go", "docs/*.md", "g*/"}
	cases := map[string]bool{
		"a.go":           true,
		"b.go":           false,
		"dir/x":          true,
		"dir/x/y/z":      true,
		"dir":            false,
		"dirx/y":         false,
		"src/a.go":       true,
		"src/p/q/a.go":   true,
		"src/a.txt":      false,
		"docs/x.md":      true,
		"docs/sub/x.md":  false,
		"gen/x":          true,
		"../a.go":        false,
		"/a.go":          false,
		"dir/../a.go":    true,
		"dir/../../a.go": false,
	}
	for p, want := range cases {
		if got := Match(entries, p); got != want {
			t.Errorf("Match(%q) = %v, want %v", p, got, want)
		}
	}
	if got := Outside(entries, []string{"a.go", "b.go", "dir/q"}); len(got) != 1 || got[0] != "b.go" {
		t.Errorf("Outside = %v", got)
	}
}

func TestOverlap(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"a.go", "a.go", true},
		{"a.go", "b.go", false},
		{"dir/", "dir/x.go", true},
		{"dir/", "dirx/", false},
		{"dir/", "dir/sub/", true},
		{"src/**/*.go", "src/x/y.go", true},
		{"src/**/*.go", "lib/x.go", false},
		{"src/*.go", "src/*.md", false},
		{"src/**", "src/a/", true},
		{"a/", "b/**/*.go", false},
	}
	for _, c := range cases {
		if got := Overlap(c.a, c.b); got != c.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Overlap(c.b, c.a); got != c.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}
