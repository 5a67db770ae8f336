package usage

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/muster-run/muster/internal/golden"
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
