package planner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/muster-run/muster"
)

// Bounds of what a survey shows the planner.
const (
	maxTreeEntries = 200   // lines of the file tree
	maxWalk        = 20000 // files looked at
	maxReadme      = 3000  // bytes of the README's head
	readmeLines    = 60
)

// Shape is what the planner is told about the repository: a bounded file
// tree, the gates that fit it, and the head of its README.
type Shape struct {
	// Files counts the files seen (up to maxWalk; Truncated past it).
	Files     int
	Truncated bool
	// Tree lists files, or directories as "dir/ (N files)" where the
	// whole list would be too long.
	Tree []string
	// Gates are the [gates] of the config and the commands detected from
	// the repository's build files.
	Gates []muster.GateSpec
	// Readme is the head of README.md (or README), if any.
	Readme string
}

// Survey looks at the clone in dir: its files (not .git), build files
// and README. It never fails: what cannot be read is left out.
func Survey(dir string, cfg *muster.Config) Shape {
	var sh Shape
	var files []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" && path != dir {
				return filepath.SkipDir
			}
			return nil
		}
		if len(files) >= maxWalk {
			sh.Truncated = true
			return filepath.SkipAll
		}
		rel, err := filepath.Rel(dir, path)
		if err == nil {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files)
	sh.Files = len(files)
	sh.Tree = tree(files, maxTreeEntries)
	if cfg != nil {
		sh.Gates = append(sh.Gates, cfg.Gates...)
	}
	for _, g := range DetectGates(dir) {
		if !hasCommand(sh.Gates, g.Command) {
			sh.Gates = append(sh.Gates, g)
		}
	}
	sh.Readme = readme(dir)
	return sh
}

// tree lists files when they fit in limit lines, else groups them by
// directory, as deep as still fits.
func tree(files []string, limit int) []string {
	if len(files) <= limit {
		return files
	}
	best := group(files, 1)
	for depth := 2; depth <= 4; depth++ {
		g := group(files, depth)
		if len(g) > limit {
			break
		}
		best = g
	}
	if len(best) > limit {
		best = append(best[:limit], fmt.Sprintf("... (%d more entries)", len(best)-limit))
	}
	return best
}

// group shows files at most depth directories deep as they are, and
// deeper ones as their directory at that depth with a count.
func group(files []string, depth int) []string {
	var out []string
	counts := map[string]int{}
	for _, f := range files {
		parts := strings.Split(f, "/")
		if len(parts) <= depth {
			out = append(out, f)
			continue
		}
		d := strings.Join(parts[:depth], "/") + "/"
		if counts[d] == 0 {
			out = append(out, d)
		}
		counts[d]++
	}
	for i, e := range out {
		if n := counts[e]; n > 0 {
			out[i] = fmt.Sprintf("%s (%d files)", e, n)
		}
	}
	return out
}

func hasCommand(gs []muster.GateSpec, cmd string) bool {
	for _, g := range gs {
		if g.Command == cmd {
			return true
		}
	}
	return false
}

// DetectGates returns gate commands that fit the build files at the top
// of dir: go.mod, package.json (its test script), Cargo.toml, a Makefile
// with a test target, pyproject.toml or setup.py.
func DetectGates(dir string) []muster.GateSpec {
	var out []muster.GateSpec
	exists := func(name string) bool {
		st, err := os.Lstat(filepath.Join(dir, name))
		return err == nil && st.Mode().IsRegular()
	}
	if exists("go.mod") {
		out = append(out, muster.GateSpec{Name: "build", Command: "go build ./..."}, muster.GateSpec{Name: "test", Command: "go test ./..."})
	}
	if exists("package.json") && hasTestScript(filepath.Join(dir, "package.json")) {
		out = append(out, muster.GateSpec{Name: "test", Command: "npm test"})
	}
	if exists("Cargo.toml") {
		out = append(out, muster.GateSpec{Name: "test", Command: "cargo test"})
	}
	if exists("Makefile") && hasTarget(filepath.Join(dir, "Makefile"), "test") {
		out = append(out, muster.GateSpec{Name: "test", Command: "make test"})
	}
	if exists("pyproject.toml") || exists("setup.py") {
		out = append(out, muster.GateSpec{Name: "test", Command: "python -m pytest"})
	}
	return out
}

func hasTestScript(path string) bool {
	data, err := readHead(path, 256<<10)
	if err != nil {
		return false
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(data, &pkg) != nil {
		return false
	}
	t := pkg.Scripts["test"]
	return t != "" && !strings.Contains(t, "no test specified")
}

func hasTarget(path, target string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 0; sc.Scan() && n < 5000; n++ {
		if strings.HasPrefix(sc.Text(), target+":") {
			return true
		}
	}
	return false
}

func readme(dir string) string {
	for _, name := range []string{"README.md", "README", "README.txt", "readme.md"} {
		p := filepath.Join(dir, name)
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		data, err := readHead(p, maxReadme)
		if err != nil {
			continue
		}
		lines := strings.Split(string(data), "\n")
		if len(lines) > readmeLines {
			lines = lines[:readmeLines]
		}
		return strings.TrimSpace(strings.ToValidUTF8(strings.Join(lines, "\n"), ""))
	}
	return ""
}

func readHead(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
