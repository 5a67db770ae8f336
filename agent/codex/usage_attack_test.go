package codex

import (
	"os"
	"path/filepath"
	"testing"
)

// TestUsageStateStaysInTheHome: the agent (a shell command of the model
// under Codex) makes its ~/.codex a link to a directory of the user's
// before Codex reports the turn's usage. muster keeps the thread's last
// total under the home, read and written through a root opened on the
// home itself, so it neither reads nor writes where the link leads.
func TestUsageStateStaysInTheHome(t *testing.T) {
	home := t.TempDir()
	user := t.TempDir()
	if err := os.Symlink(user, filepath.Join(home, ".codex")); err != nil {
		t.Fatal(err)
	}
	u := newUsageState(home, "m", nil)
	u.delta("th-1", usage{InputTokens: 10, OutputTokens: 2})
	if ents, _ := os.ReadDir(user); len(ents) != 0 {
		t.Errorf("muster wrote %d entries where the agent's link led (%s)", len(ents), ents[0].Name())
	}
}

// TestShellSnapshotsDroppedInTheHomeOnly: the removal of Codex's shell
// snapshots (they may hold the key) after an invocation does not follow
// a link the agent made of ~/.codex to remove a directory of the user's
// of the same name; a real one in the home is removed.
func TestShellSnapshotsDroppedInTheHomeOnly(t *testing.T) {
	home, user := t.TempDir(), t.TempDir()
	keep := filepath.Join(user, "shell_snapshots", "keep")
	if err := os.MkdirAll(filepath.Dir(keep), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keep, []byte("the user's own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(user, filepath.Join(home, ".codex")); err != nil {
		t.Fatal(err)
	}
	dropShellSnapshots(home)
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("the removal followed the agent's link: %v", err)
	}
	own := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(filepath.Join(own, ".codex", "shell_snapshots"), 0o700); err != nil {
		t.Fatal(err)
	}
	dropShellSnapshots(own)
	if _, err := os.Stat(filepath.Join(own, ".codex", "shell_snapshots")); err == nil {
		t.Error("the home's own shell snapshots were left")
	}
}

// TestUsageStateIgnoresAPlantedTotal: during a fix round the agent writes
// the thread's running total as it stands into the file muster keeps it
// in (its home is its own to write). The round is counted from the total
// this muster process saw last, not from the agent's file.
func TestUsageStateIgnoresAPlantedTotal(t *testing.T) {
	home := t.TempDir()
	last := &lastTotals{m: map[string]usage{}}
	first := newUsageState(home, "m", last).delta("th-1", usage{InputTokens: 100, OutputTokens: 10})
	if first.InputTokens != 100 || first.OutputTokens != 10 {
		t.Fatalf("first round %+v", first)
	}
	p := filepath.Join(home, ".codex", "muster-usage", "th-1.json")
	if err := os.WriteFile(p, []byte(`{"input_tokens":190,"output_tokens":19}`), 0o600); err != nil {
		t.Fatal(err)
	}
	second := newUsageState(home, "m", last).delta("th-1", usage{InputTokens: 200, OutputTokens: 20})
	if second.InputTokens != 100 || second.OutputTokens != 10 {
		t.Errorf("second round counted %+v, want the 100 and 10 it used", second)
	}
}
