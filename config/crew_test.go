package config

import (
	"os"
	"reflect"
	"testing"

	"github.com/muster-run/muster"
)

func TestParseCrew(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flag string
		want *muster.ExecutorSpec
	}{
		{"claude=claude-code:3", &muster.ExecutorSpec{Name: "claude", Kind: "claude-code", Clones: 3, Roles: []muster.Role{"coder"}}},
		{"sim=sim", &muster.ExecutorSpec{Name: "sim", Kind: "sim", Clones: 1, Roles: []muster.Role{"coder"}}},
		{"local=command:2:./agent.sh --fast  -v", &muster.ExecutorSpec{Name: "local", Kind: "command", Clones: 2, Roles: []muster.Role{"coder"}, Command: []string{"./agent.sh", "--fast", "-v"}}},
		{"local=command:/opt/bin/agent:x", &muster.ExecutorSpec{Name: "local", Kind: "command", Clones: 1, Roles: []muster.Role{"coder"}, Command: []string{"/opt/bin/agent:x"}}},
	} {
		got, err := ParseCrew(tc.flag)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, %v", tc.flag, got, err)
		}
	}
	for _, tc := range []struct{ flag, want string }{
		{"claude", `--crew "claude": want NAME=KIND[:CLONES], such as claude=claude-code:3`},
		{"=sim", `--crew "=sim": want NAME=KIND[:CLONES], such as claude=claude-code:3`},
		{"a#1=sim", `--crew "a#1=sim": bad executor name "a#1": use letters, digits, ".", "_" and "-"`},
		{"a=robot:2", `--crew "a=robot:2": unknown kind "robot" (known kinds: ` + knownKinds + ")"},
		{"a=claud:2", `--crew "a=claud:2": unknown kind "claud"; did you mean "claude-code"? (known kinds: ` + knownKinds + ")"},
		{"a=codx", `--crew "a=codx": unknown kind "codx"; did you mean "codex"? (known kinds: ` + knownKinds + ")"},
		{"a=sim:0", `--crew "a=sim:0": clones must be from 1 to 1000`},
		{"a=sim:99999999999999999999", `--crew "a=sim:99999999999999999999": clones must be from 1 to 1000`},
		{"a=codex:2:./x", `--crew "a=codex:2:./x": only kinds command and acp take a program`},
	} {
		_, err := ParseCrew(tc.flag)
		if err == nil || err.Error() != tc.want || muster.ErrorCode(err) != muster.CodeInvalid {
			t.Errorf("%s: got %v, want %s", tc.flag, err, tc.want)
		}
	}
}

func TestMergeCrewCommandOverride(t *testing.T) {
	t.Parallel()
	cfg, probs := Parse("m.toml", []byte("[executors.sh]\nkind = \"command\"\nclones = 2\ncommand = [\"./agent.sh\"]\n"))
	if len(probs) != 0 {
		t.Fatal(probs)
	}
	// Overriding a configured command executor's clones keeps its program.
	if err := MergeCrew(cfg, []string{"sh=command:4"}); err != nil {
		t.Fatal(err)
	}
	if e := cfg.Executor("sh"); e.Clones != 4 || !reflect.DeepEqual(e.Command, []string{"./agent.sh"}) {
		t.Errorf("sh = %+v", e)
	}
	// Another kind replaces the executor but keeps the roles of the file.
	cfg, _ = Parse("m.toml", []byte("[executors.rv]\nkind = \"command\"\ncommand = [\"./r.sh\"]\nroles = [\"reviewer\"]\n"))
	if err := MergeCrew(cfg, []string{"rv=sim:2"}); err != nil {
		t.Fatal(err)
	}
	if e := cfg.Executor("rv"); e.Kind != "sim" || e.Clones != 2 || len(e.Command) != 0 || !reflect.DeepEqual(e.Roles, []muster.Role{"reviewer"}) {
		t.Errorf("rv = %+v", e)
	}
	// A new command executor needs its program.
	err := MergeCrew(cfg, []string{"local=command:2"})
	want := `--crew "local=command:2": kind command needs a program: NAME=command[:CLONES]:PROGRAM [ARGS...]`
	if err == nil || err.Error() != want || muster.ErrorCode(err) != muster.CodeInvalid {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestMerge(t *testing.T) {
	t.Parallel()
	cfg, probs := Parse("m.toml", []byte("[executors.claude]\nkind = \"claude-code\"\nmodel = \"m\"\nroles = [\"coder\", \"reviewer\"]\n[executors.codex]\nkind = \"codex\"\nmodel = \"x\"\n"))
	if len(probs) != 0 {
		t.Fatal(probs)
	}
	crew := []*muster.ExecutorSpec{}
	for _, f := range []string{"claude=claude-code:4", "codex=command:./a.sh", "sim=sim:2"} {
		e, err := ParseCrew(f)
		if err != nil {
			t.Fatal(err)
		}
		crew = append(crew, e)
	}
	Merge(cfg, crew)
	want := []*muster.ExecutorSpec{
		{Name: "claude", Kind: "claude-code", Clones: 4, Model: "m", Roles: []muster.Role{"coder", "reviewer"}, Line: 1},
		{Name: "codex", Kind: "command", Clones: 1, Roles: []muster.Role{"coder"}, Command: []string{"./a.sh"}},
		{Name: "sim", Kind: "sim", Clones: 2, Roles: []muster.Role{"coder"}},
	}
	if !reflect.DeepEqual(cfg.Executors, want) {
		for _, e := range cfg.Executors {
			t.Errorf("%+v", *e)
		}
	}
	// Merge copies: changing the flag's spec later does not change cfg.
	crew[2].Clones = 9
	if cfg.Executor("sim").Clones != 2 {
		t.Error("Merge kept a pointer to the flag's spec")
	}
}

// FuzzParse checks that no document makes Parse panic or report a line
// outside the file.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("testdata/muster.toml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("[executors.a]\nkind = \"command\"\nenv = { A = { B = 1 } }\n[[gates]]\nx = 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, probs := Parse("m.toml", data)
		lines := 1
		for _, c := range data {
			if c == '\n' {
				lines++
			}
		}
		for _, p := range probs {
			if p.Line < 0 || p.Line > lines || len(p.Message) > 20 && p.Message[:20] == "cannot read the conf" {
				t.Fatalf("bad problem: %v", p)
			}
		}
	})
}
