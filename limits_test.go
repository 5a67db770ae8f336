package muster

import "testing"

func TestParseBytes(t *testing.T) {
	t.Parallel()
	good := map[string]int64{"0": 0, "512": 512, "16MiB": 16 << 20, "2GiB": 2 << 30, "2gib": 2 << 30, "512MB": 512e6, "1 G": 1e9, "3Ki": 3 << 10, "7T": 7e12}
	for in, want := range good {
		if n, ok := ParseBytes(in); !ok || n != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, n, ok, want)
		}
	}
	for _, in := range []string{"", "lots", "-1", "1.5G", "9999999999TiB", "G", "1GG"} {
		if n, ok := ParseBytes(in); ok {
			t.Errorf("ParseBytes(%q) = %d, accepted", in, n)
		}
	}
}
