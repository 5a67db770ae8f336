package agents

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/doctor"
	"github.com/muster-run/muster/internal/agentkit"
)

// TestEveryKindIsComplete checks the registry of executor kinds against
// everything that must follow it: an adapter, the CLI details of CLI and
// ACP kinds, a row in docs/agents.md's table of kinds, and a doctor check.
func TestEveryKindIsComplete(t *testing.T) {
	doc, err := os.ReadFile("../../docs/agents.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[muster.ExecKind]bool{}
	var specs []*muster.ExecutorSpec
	for _, k := range muster.Kinds {
		t.Run(string(k.Name), func(t *testing.T) {
			if seen[k.Name] {
				t.Fatal("listed twice")
			}
			seen[k.Name] = true
			spec := &muster.ExecutorSpec{Name: "x", Kind: k.Name, Clones: 1, Model: "m", BaseURL: "http://127.0.0.1:1"}
			if k.NeedsCommand {
				spec.Command = []string{"true"}
			}
			if _, err := New(spec); err != nil {
				t.Errorf("no adapter: %v", err)
			}
			if k.Family == muster.FamilyCLI || k.Family == muster.FamilyACP {
				if agentkit.Lookup(k.Name) == nil {
					t.Error("no agentkit.Kinds entry")
				}
			}
			if k.Family == muster.FamilyHTTP && k.KeyEnv == "" {
				t.Error("an HTTP kind without its KeyEnv (doctor and the adapter read it)")
			}
			if !strings.Contains(string(doc), "\n| `"+string(k.Name)+"` |") {
				t.Errorf("no row in docs/agents.md's table of kinds")
			}
			specs = append(specs, spec)
		})
	}
	res := doctor.Check(context.Background(), &muster.Config{Executors: specs}, doctor.Options{
		Getenv: func(string) string { return "" }, HasLogin: func(*agentkit.Kind) bool { return false },
		VersionTimeout: 10 * time.Second, OnlyConfigured: true,
	})
	if len(res) != len(specs) {
		t.Fatalf("doctor checked %d executors, want %d", len(res), len(specs))
	}
	for i, r := range res {
		for _, p := range r.Problems {
			if strings.Contains(p, "unknown kind") {
				t.Errorf("doctor %s: %s", specs[i].Kind, p)
			}
		}
	}
	for _, k := range agentkit.Kinds {
		if muster.LookupKind(k.Name) == nil {
			t.Errorf("agentkit kind %s is not in muster.Kinds", k.Name)
		}
	}
	for fam := range adapters {
		found := false
		for _, k := range muster.Kinds {
			found = found || k.Family == fam
		}
		if !found {
			t.Errorf("adapter family %s has no kind", fam)
		}
	}
}

// TestKindListsInDocs: the kind lists of README.md and docs/planfile.md
// (the comment on their `kind = "claude-code"` line) name every kind of
// the registry, in its order.
func TestKindListsInDocs(t *testing.T) {
	want := strings.Join(muster.ExecutorKinds, " | ")
	for _, f := range []string{"../../README.md", "../../docs/planfile.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(l, `kind = "claude-code"`) {
				continue
			}
			found = true
			if _, list, _ := strings.Cut(l, "# "); strings.TrimSpace(list) != want {
				t.Errorf("%s: the kind list %q is not the registry's %q", f, strings.TrimSpace(list), want)
			}
		}
		if !found {
			t.Errorf("%s: no `kind = \"claude-code\"  # kinds...` line", f)
		}
	}
}
