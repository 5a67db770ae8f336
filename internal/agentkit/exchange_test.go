package agentkit

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/muster-run/muster"
)

// A coder's home is reused across its rounds, so its agent may plant a
// link or a FIFO where muster seeds settings and the login next round:
// muster replaces them, never writes through them, never blocks.
func TestSeedingFollowsNoLink(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "bashrc")
	const orig = "# the user's\n"
	if err := os.WriteFile(victim, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	user := t.TempDir()
	t.Setenv("HOME", user)
	kind := Lookup(muster.ExecClaudeCode)
	if len(kind.LoginFiles) == 0 {
		t.Skip("no login files for claude-code")
	}
	login := filepath.Join(user, kind.LoginFiles[0])
	if err := os.MkdirAll(filepath.Dir(login), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(login, []byte(`{"token":"t"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	plant := func(rel string, fifo bool) {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		var err error
		if fifo {
			err = syscall.Mkfifo(p, 0o600)
		} else {
			err = os.Symlink(victim, p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	plant(".gemini/settings.json", false)
	plant(".codex/config.toml", true)
	plant(kind.LoginFiles[0], false)
	if err := WriteFile(home, ".gemini/settings.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(home, ".codex/config.toml", []byte("x = 1\n")); err != nil {
		t.Fatal(err)
	}
	if err := SeedLogin(kind, home); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != orig {
		t.Fatalf("muster wrote through a link in the agent's home: %q", b)
	}
	for rel, want := range map[string]string{".gemini/settings.json": "{}", ".codex/config.toml": "x = 1\n", kind.LoginFiles[0]: `{"token":"t"}`} {
		p := filepath.Join(home, rel)
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s is not muster's regular file: %v %v", rel, st, err)
			continue
		}
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s: %q, want %q", rel, b, want)
		}
	}
}
