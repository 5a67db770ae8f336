package muster_test

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
)

// The layer table of ARCHITECTURE.md §3, checked over the real import
// graph (non-test files). This is where the adapters' rules live: a new
// adapter is checked without a row anywhere (.golangci.yml's depguard
// keeps only the engine's, the driver's and the command line's rules). Dependencies point down: the root imports nothing of
// muster's, the engine only the root, the driver the root and the engine,
// adapters never the driver, the engine, the command line or each other.

const module = "github.com/muster-run/muster"

// helpers are internal packages any layer below the command line may use.
func isHelper(p string) bool {
	return strings.HasPrefix(p, "internal/") && !strings.HasPrefix(p, "internal/cli") &&
		p != "internal/agents" && !strings.HasPrefix(p, "internal/cmd/")
}

// isCommandLine reports the packages that wire adapters together.
func isCommandLine(p string) bool {
	return p == "internal/cli" || strings.HasPrefix(p, "internal/cli/") || p == "internal/agents" ||
		strings.HasPrefix(p, "cmd/") || strings.HasPrefix(p, "internal/cmd/") || strings.HasPrefix(p, "tests/")
}

// shared lists the adapters that other adapters may build on.
var shared = map[string][]string{
	"report":     {"cost"},
	"usagelog":   {"cost"},
	"tui":        {"runview"},
	"htmlreport": {"runview"},
}

func TestLayers(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	rel := func(p string) (string, bool) {
		if p == module {
			return "", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	checked := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg, _ := rel(f[0])
		for _, imp := range f[1:] {
			dep, ours := rel(imp)
			if !ours {
				continue
			}
			if why := forbidden(pkg, dep); why != "" {
				t.Errorf("%s imports %s: %s (ARCHITECTURE.md §3)", name(pkg), name(dep), why)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no imports checked")
	}
}

func name(p string) string {
	if p == "" {
		return "muster (the root)"
	}
	return p
}

// forbidden says why pkg may not import dep, or "".
func forbidden(pkg, dep string) string {
	switch {
	case isCommandLine(pkg):
		return ""
	case isCommandLine(dep):
		return "nothing but the command line imports the command line"
	case pkg == "":
		return "the root package is the domain: it imports nothing of muster's"
	case pkg == "engine" || strings.HasPrefix(pkg, "engine/"):
		if dep != "" && dep != "engine" {
			return "the engine is pure: it imports only the root"
		}
	case pkg == "driver":
		if dep != "" && dep != "engine" && dep != "internal/textsafe" && dep != "internal/testout" && dep != "internal/exchange" {
			return "the driver reaches the world through the root's ports"
		}
	case pkg == "internal/exchange":
		if dep != "" {
			return "internal/exchange, which the driver uses, builds on the standard library and the root only"
		}
	case isHelper(pkg):
		if !isHelper(dep) && dep != "" && !strings.HasPrefix(dep, "mockllm") {
			return "internal helpers build on the root and each other only"
		}
	default: // an adapter
		switch {
		case dep == "" || isHelper(dep):
		case dep == "driver" || dep == "engine":
			return "adapters serve the driver through ports; they neither import it nor decide"
		case strings.HasPrefix(dep, pkg+"/"), strings.HasPrefix(pkg, dep+"/"):
			// an adapter and its own sub-packages (mockllm/mockllmtest)
		default:
			for _, s := range shared[pkg] {
				if dep == s {
					return ""
				}
			}
			return "adapters never import each other (share through the root or internal/)"
		}
	}
	return ""
}

func TestLayersRuleCanFail(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pkg, dep string
		bad      bool
	}{
		{"engine", "git", true}, {"engine", "", false}, {"driver", "journal", true}, {"driver", "engine", false}, {"driver", "internal/textsafe", false}, {"driver", "internal/exchange", false},
		{"internal/exchange", "internal/proc", true}, {"internal/exchange", "", false},
		{"git", "journal", true}, {"git", "internal/owns", false}, {"git", "driver", true}, {"report", "cost", false},
		{"", "engine", true}, {"config", "internal/cli/cmdutil", true}, {"internal/cli/run", "driver", false},
		{"agent/claude", "agent/codex", true}, {"internal/proc", "git", true},
		{"egress", "internal/agentkit", false}, {"egress", "agent/claude", true}, {"egress", "driver", true},
	} {
		if got := forbidden(c.pkg, c.dep) != ""; got != c.bad {
			t.Errorf("%s -> %s: forbidden %v, want %v", name(c.pkg), name(c.dep), got, c.bad)
		}
	}
}

// TestBinaryDoesNotLinkTesting: test helpers stay out of the shipped
// binary (mockllm's lives in mockllm/mockllmtest).
func TestBinaryDoesNotLinkTesting(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "./cmd/muster").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "testing" || strings.HasSuffix(p, "test") && strings.HasPrefix(p, module) {
			t.Errorf("cmd/muster links %s", p)
		}
	}
}

// TestPlanReadersDoNotLinkTheDriver: the commands that read a plan or a
// run without driving one (validate, verify, report) and the checks they
// share (internal/cli/preflight) link neither the driver nor the run's
// session; only run, resume, demo and pr (whose --follow resumes a run)
// import internal/cli/runner.
func TestPlanReadersDoNotLinkTheDriver(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"internal/cli/validate", "internal/cli/verify", "internal/cli/report", "internal/cli/preflight"} {
		out, err := exec.Command("go", "list", "-deps", "./"+pkg).Output()
		if err != nil {
			t.Skipf("go list: %v", err)
		}
		if why := linksSession(pkg, strings.Fields(string(out))); why != "" {
			t.Error(why)
		}
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if why := importsRunner(strings.TrimPrefix(f[0], module+"/"), f[1:]); why != "" {
			t.Error(why)
		}
	}
}

// linksSession says why pkg, linking deps, breaks the rule, or "".
func linksSession(pkg string, deps []string) string {
	for _, d := range deps {
		if d == module+"/driver" || d == module+"/internal/cli/runner" {
			return pkg + " links " + strings.TrimPrefix(d, module+"/") + " (go list -deps): move what it borrows into internal/cli/preflight or cmdutil"
		}
	}
	return ""
}

// runnerUsers are the commands that drive a run's session.
// pr drives a run too: a --follow pass is a resume of it.
var runnerUsers = map[string]bool{"internal/cli/run": true, "internal/cli/resume": true, "internal/cli/demo": true, "internal/cli/pr": true}

// importsRunner says why pkg may not import what it imports, or "".
func importsRunner(pkg string, imports []string) string {
	for _, imp := range imports {
		if imp == module+"/internal/cli/runner" && !runnerUsers[pkg] {
			return pkg + " imports internal/cli/runner, a run's session: only run, resume, demo and pr do (the shared checks are internal/cli/preflight)"
		}
	}
	return ""
}

func TestPlanReadersRuleCanFail(t *testing.T) {
	t.Parallel()
	if linksSession("internal/cli/validate", []string{"fmt", module + "/driver"}) == "" {
		t.Error("a package linking the driver passes")
	}
	if linksSession("internal/cli/validate", []string{"fmt", module + "/planfile"}) != "" {
		t.Error("a package linking no driver fails")
	}
	if importsRunner("internal/cli/validate", []string{module + "/internal/cli/runner"}) == "" {
		t.Error("validate importing the runner passes")
	}
	if importsRunner("internal/cli/run", []string{module + "/internal/cli/runner"}) != "" {
		t.Error("run importing the runner fails")
	}
}
