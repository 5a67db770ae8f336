package doctor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Versioner returns a program's version output ("v20.11.0", "go1.22.1",
// "rustc 1.80.0 (...)"), or an error when it is not installed.
type Versioner func(program string, args ...string) (string, error)

// ToolchainWarnings says, one sentence each, where the installed
// toolchain misses what the project at top asks: package.json engines
// and .nvmrc (node), go.mod's go line, rust-toolchain (rustc). A
// toolchain that is not installed, or a requirement muster cannot read
// (lts/*, stable), says nothing.
func ToolchainWarnings(top string, version Versioner) []string {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(top, name))
		if err != nil {
			return ""
		}
		return string(b)
	}
	var out []string
	have := func(program string, args ...string) []int {
		v, err := version(program, args...)
		if err != nil {
			return nil
		}
		return parseVersion(v)
	}
	var pj struct {
		Engines map[string]string `json:"engines"`
	}
	if s := read("package.json"); s != "" && json.Unmarshal([]byte(s), &pj) == nil && pj.Engines["node"] != "" {
		if v := have("node", "--version"); v != nil && !satisfies(v, pj.Engines["node"]) {
			out = append(out, fmt.Sprintf("node %s is installed; package.json's engines asks for node %s: gates may fail in every clone", join(v), pj.Engines["node"]))
		}
	}
	if want := strings.TrimSpace(read(".nvmrc")); want != "" {
		if w := parseVersion(want); w != nil {
			if v := have("node", "--version"); v != nil && !prefix(v, w) {
				out = append(out, fmt.Sprintf("node %s is installed; .nvmrc asks for node %s", join(v), strings.TrimPrefix(want, "v")))
			}
		}
	}
	if m := goLine().FindStringSubmatch(read("go.mod")); m != nil {
		if v := have("go", "env", "GOVERSION"); v != nil && less(v, parseVersion(m[1])) {
			out = append(out, fmt.Sprintf("go %s is installed; go.mod asks for go %s (go may download that toolchain, which a confined setup or gate cannot)", join(v), m[1]))
		}
	}
	rust := read("rust-toolchain")
	if m := rustChannel().FindStringSubmatch(read("rust-toolchain.toml")); m != nil {
		rust = m[1]
	}
	if w := parseVersion(strings.TrimSpace(rust)); w != nil {
		if v := have("rustc", "--version"); v != nil && less(v, w) {
			out = append(out, fmt.Sprintf("rustc %s is installed; rust-toolchain asks for %s", join(v), strings.TrimSpace(rust)))
		}
	}
	return out
}

var (
	goLine      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^go\s+(\d+\.\d+(?:\.\d+)?)\s*$`) })
	rustChannel = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\s*channel\s*=\s*"([^"]+)"`) })
	versionNums = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(\d+)(?:\.(\d+))?(?:\.(\d+))?`) })
)

// parseVersion reads the first dotted number in s, or nil.
func parseVersion(s string) []int {
	m := versionNums().FindStringSubmatch(s)
	if m == nil {
		return nil
	}
	var v []int
	for _, p := range m[1:] {
		if p == "" {
			break
		}
		n, _ := strconv.Atoi(p)
		v = append(v, n)
	}
	return v
}

func join(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ".")
}

// cmp compares a with b over b's length (missing parts of a are 0).
func cmp(a, b []int) int {
	for i := range b {
		x := 0
		if i < len(a) {
			x = a[i]
		}
		if x != b[i] {
			if x < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func less(a, b []int) bool { return b != nil && cmp(a, b) < 0 }

// prefix says whether v starts with w (.nvmrc "20" matches 20.11.0).
func prefix(v, w []int) bool { return cmp(v, w) == 0 }

var comparator = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(>=|<=|>|<|=|\^|~)?v?(\d[\d.x*]*)$`) })

// satisfies reads an npm semver range far enough for engines: "||"
// alternatives of space-separated comparators (>=, >, <, <=, =, ^, ~, a
// bare or x-ed version). A range it cannot read is satisfied.
func satisfies(v []int, rng string) bool {
	for _, alt := range strings.Split(rng, "||") {
		ok, known := true, true
		for _, c := range strings.Fields(alt) {
			m := comparator().FindStringSubmatch(c)
			if m == nil {
				known = false
				break
			}
			w := parseVersion(strings.NewReplacer(".x", "", ".*", "").Replace(m[2]))
			switch m[1] {
			case ">=":
				ok = ok && cmp(v, w) >= 0
			case ">":
				ok = ok && cmp(v, w) > 0
			case "<":
				ok = ok && cmp(v, w) < 0
			case "<=":
				ok = ok && cmp(v, w) <= 0
			case "^":
				ok = ok && cmp(v, w) >= 0 && cmp(v, w[:1]) == 0
			case "~":
				ok = ok && cmp(v, w) >= 0 && cmp(v, w[:min(2, len(w))]) == 0
			default:
				ok = ok && prefix(v, w)
			}
		}
		if !known || ok {
			return true
		}
	}
	return false
}
