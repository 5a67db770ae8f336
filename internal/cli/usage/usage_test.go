package usage

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/muster-run/muster/internal/golden"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

func TestNewCmdParses(t *testing.T) {
	t.Parallel()
	var got *Options
	cmd := newCmd(func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"codex", "monthly", "--dir", "/x", "--since", "20260102", "--until", "2026-02-03", "--tz", "Asia/Tokyo", "--breakdown", "--json", "--debug"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Source != "codex" || got.Report != "monthly" || got.Dir != "/x" || got.Since != "2026-01-02" || got.Until != "2026-02-03" ||
		got.TZ.String() != "Asia/Tokyo" || !got.Breakdown || !got.JSON || !got.Debug {
		t.Errorf("options = %+v", got)
	}
}

func TestNewCmdBadInput(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"gemini"},
		{"claude", "weekly"},
		{"claude", "--since", "2026-13-01"},
		{"claude", "--until", "yesterday"},
		{"claude", "--since", "2026-02-02", "--until", "2026-01-01"},
		{"claude", "--tz", "Mars/Olympus"},
	} {
		cmd := newCmd(func(context.Context, *Options) error { t.Error("ran"); return nil })
		cmd.SetArgs(args)
		cmd.SetOut(new(bytes.Buffer))
		cmd.SetErr(new(bytes.Buffer))
		err := cmd.Execute()
		if err == nil || muster.ErrorCode(err) != muster.CodeInvalid {
			t.Errorf("%v: err = %v (code %v), want CodeInvalid", args, err, muster.ErrorCode(err))
		}
	}
}

func TestUsageJSONShape(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	cmd := NewCmd()
	cmd.SetArgs([]string{"claude", "daily", "--dir", "../../../usagelog/testdata/claude-c", "--json", "--tz", "UTC", "--debug"})
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m["source"] != "claude" || m["report"] != "daily" {
		t.Errorf("source/report = %v %v", m["source"], m["report"])
	}
	rows := m["rows"].([]any)
	row := rows[0].(map[string]any)
	for _, k := range []string{"key", "input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens", "total_tokens", "cost_usd", "models"} {
		if _, ok := row[k]; !ok {
			t.Errorf("row lacks %q", k)
		}
	}
	tot := m["totals"].(map[string]any)
	for _, k := range []string{"input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens", "total_tokens", "cost_usd"} {
		if _, ok := tot[k]; !ok {
			t.Errorf("totals lack %q", k)
		}
	}
	checkGolden(t, "testdata/claude-c.json", out.Bytes())
	if !strings.Contains(errb.String(), "skipped 3 lines: invalid json") {
		t.Errorf("debug output:\n%s", errb.String())
	}
}

func TestUsageTextAndMissingDir(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	cmd := NewCmd()
	cmd.SetArgs([]string{"claude", "monthly", "--dir", "../../../usagelog/testdata/claude-a", "--tz", "UTC", "--breakdown"})
	cmd.SetOut(&out)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/claude-a-monthly.txt", out.Bytes())

	cmd = NewCmd()
	cmd.SetArgs([]string{"codex", "--dir", filepath.Join(t.TempDir(), "none")})
	cmd.SetOut(new(bytes.Buffer))
	err := cmd.Execute()
	if err == nil || muster.ErrorCode(err) != muster.CodeInternal {
		t.Errorf("missing dir: err = %v", err)
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.Check(t, path, got)
}

// The sessions muster ran live in each attempt's agent home under the
// repository's run directories: usage finds them there by default, as
// well as in the user's own home (issue 25: it saw none of them).
func TestUsageFindsMusterRuns(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	t.Setenv("HOME", t.TempDir()) // no ~/.claude of the user's
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	repo := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	home := filepath.Join(repo, ".git", "muster", "runs", "r1", "scratch", "a-1", "home-x", ".claude", "projects", "p1")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../../../usagelog/testdata/claude-a/projects/p1/s1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "s1.jsonl"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	usage := func(args ...string) string {
		var out bytes.Buffer
		cmd := NewCmd()
		cmd.SetArgs(append([]string{"claude", "session", "--repo", repo, "--tz", "UTC", "--json"}, args...))
		cmd.SetOut(&out)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.String()
	}
	if got := usage(); !strings.Contains(got, `"key": "s1"`) || !strings.Contains(got, `"total_tokens": 308080`) {
		t.Errorf("the run's session not found:\n%s", got)
	}
	if got := usage("--runs=false"); !strings.Contains(got, `"rows": []`) || strings.Contains(got, `"s1"`) {
		t.Errorf("--runs=false still read the run:\n%s", got)
	}
}
