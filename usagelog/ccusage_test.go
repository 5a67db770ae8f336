package usagelog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/muster-run/muster/usagelog"
)

// ccusageBinary finds ccusage 20.0.24's native binary: $CCUSAGE, else the
// copy `npm install --prefix .cache/ccusage ccusage@20.0.24` puts in the
// repository's .cache.
func ccusageBinary() string {
	if p := os.Getenv("CCUSAGE"); p != "" {
		return p
	}
	p, _ := filepath.Abs("../.cache/ccusage/node_modules/@ccusage/ccusage-linux-x64/bin/ccusage")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// The testdata/claude-* folders hold the edge cases found while
// comparing with ccusage: per-block duplicates, missing ids, sidechain
// replays, null fields, bad versions, progress lines, sub-agent files,
// the 200k tier, one-hour cache writes, fast mode, costUSD, unknown
// models, torn and pretty-printed lines.
var ccusageCases = []string{"claude-a", "claude-b", "claude-c"}

// TestMatchesCcusage compares daily tokens (exactly) and costs (0.5 %)
// with ccusage's own output on the same folders.
func TestMatchesCcusage(t *testing.T) {
	bin := ccusageBinary()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("ccusage not installed (CI must have it: .ci/run installs it)")
		}
		t.Skip("ccusage not installed: run `npm install --prefix .cache/ccusage ccusage@20.0.24` in the repository root (or set CCUSAGE) to compare")
	}
	for _, c := range ccusageCases {
		t.Run(c, func(t *testing.T) {
			dir, _ := filepath.Abs(filepath.Join("testdata", c))
			home := t.TempDir()
			cmd := exec.Command(bin, "claude", "daily", "--json", "--offline", "--timezone", "UTC")
			cmd.Env = []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + dir, "CODEX_HOME=" + filepath.Join(home, "none"), "TZ=UTC"}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("ccusage: %v: %s", err, errb.String())
			}
			var cc struct {
				Daily []struct {
					Date string  `json:"date"`
					In   int64   `json:"inputTokens"`
					Out  int64   `json:"outputTokens"`
					CW   int64   `json:"cacheCreationTokens"`
					CR   int64   `json:"cacheReadTokens"`
					Cost float64 `json:"totalCost"`
				} `json:"daily"`
			}
			if err := json.Unmarshal(out.Bytes(), &cc); err != nil {
				t.Fatalf("ccusage output: %v\n%s", err, out.String())
			}
			want := map[string]string{}
			wantCost := map[string]float64{}
			for _, d := range cc.Daily {
				want[d.Date] = fmt.Sprint(d.In, d.Out, d.CW, d.CR)
				wantCost[d.Date] = d.Cost
			}
			res, err := usagelog.ScanClaude(context.Background(), usagelog.Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			rep, _ := usagelog.Aggregate(res, usagelog.Daily, usagelog.Filter{TZ: time.UTC}, false)
			if len(rep.Rows) != len(want) {
				t.Errorf("%d days, ccusage %d", len(rep.Rows), len(want))
			}
			for _, r := range rep.Rows {
				got := fmt.Sprint(r.InputTokens, r.OutputTokens, r.CacheWriteTokens, r.CacheReadTokens)
				if got != want[r.Key] {
					t.Errorf("%s: tokens %s, ccusage %s", r.Key, got, want[r.Key])
				}
				if w := wantCost[r.Key]; math.Abs(r.CostUSD-w) > 0.005*w+1e-6 {
					t.Errorf("%s: cost %v, ccusage %v", r.Key, r.CostUSD, w)
				}
			}
		})
	}
}

// TestCcusageCasesGolden pins the figures of the same folders, so the
// behaviour is checked without ccusage too.
func TestCcusageCasesGolden(t *testing.T) {
	t.Parallel()
	for _, c := range ccusageCases {
		res, err := usagelog.ScanClaude(context.Background(), usagelog.Options{Dir: filepath.Join("testdata", c)})
		if err != nil {
			t.Fatal(err)
		}
		rep, _ := usagelog.Aggregate(res, usagelog.Daily, usagelog.Filter{TZ: time.UTC}, true)
		var buf bytes.Buffer
		rep.WriteJSON(&buf)
		checkGolden(t, filepath.Join("testdata", c+".golden.json"), buf.Bytes())
	}
}
