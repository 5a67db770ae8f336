package acp

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/exchange"
)

// maxRollout bounds the rollout file read for usage.
const maxRollout = 64 << 20

// codexTotal is a Codex thread's cumulative usage from its rollout in the
// clone's CODEX_HOME (sessions/*/*/*/rollout-*-<thread>.jsonl): the last
// event_msg/token_count line's info.total_token_usage. Codex counts cached
// input inside input_tokens; muster keeps it apart.
func codexTotal(home, thread string) (muster.Usage, bool) {
	if thread == "" || strings.ContainsAny(thread, `/\*?[`) {
		return muster.Usage{}, false
	}
	m, _ := filepath.Glob(filepath.Join(home, ".codex", "sessions", "*", "*", "*", "rollout-*-"+thread+".jsonl"))
	if len(m) != 1 {
		return muster.Usage{}, false
	}
	// The home is the agent's too: opened through internal/exchange (no
	// link followed, a FIFO never waited on, a regular file under its cap).
	rel, err := filepath.Rel(home, m[0])
	if err != nil {
		return muster.Usage{}, false
	}
	f, err := exchange.Open(home, rel, maxRollout)
	if f == nil || err != nil {
		return muster.Usage{}, false
	}
	defer f.Close()
	var line struct {
		Type    string `json:"type"`
		Payload struct {
			Type string `json:"type"`
			Info *struct {
				Total *struct {
					Input  int64 `json:"input_tokens"`
					Cached int64 `json:"cached_input_tokens"`
					Output int64 `json:"output_tokens"`
				} `json:"total_token_usage"`
			} `json:"info"`
		} `json:"payload"`
	}
	var u muster.Usage
	found := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		b := sc.Bytes()
		if !strings.Contains(string(b), `"token_count"`) {
			continue
		}
		line.Payload.Info = nil
		if json.Unmarshal(b, &line) != nil || line.Type != "event_msg" || line.Payload.Type != "token_count" ||
			line.Payload.Info == nil || line.Payload.Info.Total == nil {
			continue
		}
		t := line.Payload.Info.Total
		if t.Input < 0 || t.Cached < 0 || t.Output < 0 || t.Cached > t.Input {
			continue
		}
		u = muster.Usage{InputTokens: clamp(t.Input - t.Cached), CacheReadTokens: clamp(t.Cached), OutputTokens: clamp(t.Output)}
		found = true
	}
	return u, found
}

// sub is a minus b, per field, never below zero (a total lower than the
// one before is a new thread: a counted in full).
func sub(a, b muster.Usage) muster.Usage {
	if a.InputTokens < b.InputTokens || a.OutputTokens < b.OutputTokens || a.CacheReadTokens < b.CacheReadTokens {
		return a
	}
	return muster.Usage{InputTokens: a.InputTokens - b.InputTokens, OutputTokens: a.OutputTokens - b.OutputTokens,
		CacheReadTokens: a.CacheReadTokens - b.CacheReadTokens, CacheWriteTokens: a.CacheWriteTokens - b.CacheWriteTokens}
}
