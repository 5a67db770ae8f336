package usagelog_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/muster-run/muster/internal/golden"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/usagelog"
)

// line is a compact Claude Code assistant line (as Claude Code writes it).
func line(msg, req, model, ts, session string, in, out int64, extra string) string {
	ids := ""
	if msg != "" {
		ids = `"id":"` + msg + `",`
	}
	r := ""
	if req != "" {
		r = `"requestId":"` + req + `",`
	}
	return fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"message":{%s"type":"message","role":"assistant","model":"%s","content":[{"type":"text","text":"hi \"there\"\n"}],"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":%d}},%s"type":"assistant","uuid":"u","timestamp":"%s","sessionId":"%s","version":"2.1.197"%s}`,
		ids, model, in, out, r, ts, session, extra)
}

func write(t *testing.T, dir, rel string, lines ...string) {
	t.Helper()
	p := filepath.Join(dir, "projects", rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func scan(t *testing.T, dir string, opts usagelog.Options) *usagelog.Result {
	t.Helper()
	opts.Dir = dir
	res, err := usagelog.ScanClaude(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func daily(t *testing.T, res *usagelog.Result, tz string) map[string]usagelog.Totals {
	t.Helper()
	loc, err := time.LoadLocation(tz)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := usagelog.Aggregate(res, usagelog.Daily, usagelog.Filter{TZ: loc}, false)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]usagelog.Totals{}
	for _, r := range rep.Rows {
		m[r.Key] = r.Totals
	}
	return m
}

func TestDedupPerContentBlock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const ts = "2026-01-02T10:00:00.000Z"
	write(t, dir, "p/s1.jsonl",
		// one API message written as three content-block lines; the largest usage wins
		line("msg_a", "req_a", "claude-opus-4-5", ts, "s1", 100, 10, ""),
		line("msg_a", "req_a", "claude-opus-4-5", ts, "s1", 100, 50, ""),
		line("msg_a", "req_a", "claude-opus-4-5", ts, "s1", 100, 20, ""),
		// same message, another request: counted
		line("msg_a", "req_b", "claude-opus-4-5", ts, "s1", 1, 1, ""),
		// no message id: never a duplicate
		line("", "req_c", "claude-opus-4-5", ts, "s1", 7, 0, ""),
		line("", "req_c", "claude-opus-4-5", ts, "s1", 7, 0, ""),
		// no request id: duplicate only with the same session and timestamp
		line("msg_d", "", "claude-opus-4-5", ts, "s1", 1000, 0, ""),
		line("msg_d", "", "claude-opus-4-5", ts, "s1", 1000, 0, ""),
		line("msg_d", "", "claude-opus-4-5", "2026-01-02T10:00:05.000Z", "s1", 1000, 0, ""),
	)
	// a resumed session replays msg_a in another file: still one message
	write(t, dir, "p/s2.jsonl", line("msg_a", "req_a", "claude-opus-4-5", ts, "s2", 100, 50, ""))
	res := scan(t, dir, usagelog.Options{})
	got := daily(t, res, "UTC")["2026-01-02"]
	if got.InputTokens != 100+1+14+2000 || got.OutputTokens != 50+1 {
		t.Errorf("tokens = %d in, %d out; want 2115 in, 51 out", got.InputTokens, got.OutputTokens)
	}
	if res.Stats.Records != 10 || res.Stats.Entries != 6 || res.Stats.Skipped[usagelog.SkipDuplicate] != 4 {
		t.Errorf("stats = %+v", res.Stats)
	}
}

func TestSidechainReplay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const ts = "2026-01-03T10:00:00.000Z"
	side := `,"isSidechain":true`
	write(t, dir, "p/s1.jsonl", line("msg_p", "req_p", "claude-opus-4-5", ts, "s1", 100, 10, ""))
	// A sub-agent file replays the parent message under a new request id
	// (same session): the parent stays. Its own message counts.
	sub := strings.Replace(line("msg_p", "req_side", "claude-opus-4-5", ts, "s1", 5000, 10, ""), `"isSidechain":false,`, "", 1)
	own := strings.Replace(line("msg_own", "req_own", "claude-opus-4-5", ts, "s1", 300, 3, ""), `"isSidechain":false,`, "", 1)
	write(t, dir, "p/s1/subagents/agent-1.jsonl", sub[:len(sub)-1]+side+"}", own[:len(own)-1]+side+"}")
	res := scan(t, dir, usagelog.Options{})
	got := daily(t, res, "UTC")["2026-01-03"]
	if got.InputTokens != 400 || got.OutputTokens != 13 {
		t.Errorf("tokens = %d in, %d out; want 400 in, 13 out (sub-agent file read, replay dropped)", got.InputTokens, got.OutputTokens)
	}
}

func TestJunkLinesCounted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const ts = "2026-01-04T10:00:00.000Z"
	good := line("msg_g", "req_g", "claude-opus-4-5", ts, "s1", 10, 1, "")
	write(t, dir, "p/s1.jsonl",
		good,
		"not json",
		good[:len(good)/2+40], // torn
		good+`{"a":1}`,        // two objects
		`{"type":"user","message":{"role":"user","content":"hello"}}`, // no usage
		strings.Replace(good, `"msg_g"`, "null", 1),                   // null id
		strings.Replace(good, `"input_tokens":10`, `"input_tokens":1.5`, 1),
		strings.Replace(good, `"input_tokens":10`, `"input_tokens":-1`, 1),
		strings.Replace(good, ts, "yesterday", 1),
		strings.Replace(good, `"2.1.197"`, `"abc"`, 1),
		`{"message": {"id": "msg_s", "usage": {"input_tokens": 5, "output_tokens": 1}}, "timestamp": "`+ts+`"}`, // pretty: not read, as ccusage
		"",
	)
	res := scan(t, dir, usagelog.Options{})
	if got := daily(t, res, "UTC")["2026-01-04"]; got.InputTokens != 10 {
		t.Errorf("input = %d, want 10", got.InputTokens)
	}
	want := map[string]int64{
		usagelog.SkipInvalidJSON:  2, // torn, two objects
		usagelog.SkipNoUsage:      4, // not json, user line, pretty line, empty line
		usagelog.SkipNull:         1,
		usagelog.SkipBadTokens:    2,
		usagelog.SkipBadTimestamp: 1,
		usagelog.SkipInvalid:      1,
	}
	for k, v := range want {
		if res.Stats.Skipped[k] != v {
			t.Errorf("skipped[%q] = %d, want %d (all: %v)", k, res.Stats.Skipped[k], v, res.Stats.Skipped)
		}
	}
}

func TestTimeZoneDayBoundaries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "p/s1.jsonl",
		line("m1", "r1", "claude-opus-4-5", "2026-03-01T04:30:00.000Z", "s1", 1, 0, ""),  // Feb 28 in New York
		line("m2", "r2", "claude-opus-4-5", "2026-03-01T05:30:00.000Z", "s1", 2, 0, ""),  // Mar 1 in New York
		line("m3", "r3", "claude-opus-4-5", "2026-03-01T23:30:00+00:00", "s1", 4, 0, ""), // Mar 2 in Tokyo
	)
	res := scan(t, dir, usagelog.Options{})
	for tz, want := range map[string]map[string]int64{
		"UTC":              {"2026-03-01": 7},
		"America/New_York": {"2026-02-28": 1, "2026-03-01": 6},
		"Asia/Tokyo":       {"2026-03-01": 3, "2026-03-02": 4},
	} {
		got := daily(t, res, tz)
		if len(got) != len(want) {
			t.Errorf("%s: %d days, want %d", tz, len(got), len(want))
		}
		for d, in := range want {
			if got[d].InputTokens != in {
				t.Errorf("%s %s: input %d, want %d", tz, d, got[d].InputTokens, in)
			}
		}
	}
	loc, _ := time.LoadLocation("America/New_York")
	rep, _ := usagelog.Aggregate(res, usagelog.Monthly, usagelog.Filter{TZ: loc, Since: "2026-03-01"}, false)
	if len(rep.Rows) != 1 || rep.Rows[0].Key != "2026-03" || rep.Totals.InputTokens != 6 {
		t.Errorf("monthly since 2026-03-01 = %+v", rep.Rows)
	}
}

func TestCostReportedVersusEstimated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const ts = "2026-01-05T10:00:00.000Z"
	write(t, dir, "p/s1.jsonl",
		line("m1", "r1", "claude-opus-4-5", ts, "s1", 100, 10, `,"costUSD":1.5`),
		line("m2", "r2", "claude-opus-4-5", ts, "s1", 100, 10, ""),
		line("m3", "r3", "mystery-model", ts, "s1", 100, 10, ""),
	)
	res := scan(t, dir, usagelog.Options{})
	rep, _ := usagelog.Aggregate(res, usagelog.Daily, usagelog.Filter{TZ: time.UTC}, true)
	// 1.5 reported + 100×$5/M + 10×$25/M estimated + 0 for the unknown model
	if rep.Totals.CostMicros != 1_500_750 || !rep.Totals.Estimated {
		t.Errorf("totals = %+v", rep.Totals)
	}
	if len(rep.Unpriced) != 1 || rep.Unpriced[0] != "mystery-model" {
		t.Errorf("unpriced = %v", rep.Unpriced)
	}
	var only usagelog.Result
	only.Entries = res.Entries[:1]
	r1, _ := usagelog.Aggregate(&only, usagelog.Daily, usagelog.Filter{TZ: time.UTC}, false)
	if r1.Totals.Estimated {
		t.Error("a reported cost is marked estimated")
	}
}

func TestChunkedScanMatches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var lines []string
	for i := range 500 {
		ts := fmt.Sprintf("2026-01-%02dT%02d:00:00.000Z", 1+i%28, i%24)
		l := line(fmt.Sprintf("m%d", i/3), fmt.Sprintf("r%d", i/3), "claude-sonnet-4-5", ts, "s1", int64(i), 1, "")
		lines = append(lines, l, `{"type":"user","message":{"content":"`+strings.Repeat("x", i*7)+`"}}`)
	}
	write(t, dir, "p/big.jsonl", lines...)
	whole := scan(t, dir, usagelog.Options{Workers: 1})
	for _, chunk := range []int64{997, 4096, 65536} {
		part := scan(t, dir, usagelog.Options{Workers: 2, ChunkSize: chunk})
		if part.Stats.Lines != whole.Stats.Lines || part.Stats.Records != whole.Stats.Records {
			t.Errorf("chunk %d: lines %d records %d; want %d %d", chunk, part.Stats.Lines, part.Stats.Records, whole.Stats.Lines, whole.Stats.Records)
		}
		a, b := daily(t, whole, "UTC"), daily(t, part, "UTC")
		for k, v := range a {
			if b[k] != v {
				t.Errorf("chunk %d: day %s = %+v, want %+v", chunk, k, b[k], v)
			}
		}
	}
}

func TestOverlongLineSkipped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	long := line("m0", "r0", "claude-opus-4-5", "2026-01-06T10:00:00.000Z", "s1", 99, 0, `,"pad":"`+strings.Repeat("y", 5000)+`"`)
	write(t, dir, "p/s.jsonl", line("m1", "r1", "claude-opus-4-5", "2026-01-06T10:00:00.000Z", "s1", 1, 0, ""), long,
		line("m2", "r2", "claude-opus-4-5", "2026-01-06T10:00:00.000Z", "s1", 2, 0, ""))
	res := scan(t, dir, usagelog.Options{MaxLine: 2048})
	if res.Stats.Skipped[usagelog.SkipOverlong] != 1 || res.Stats.Lines != 3 {
		t.Errorf("stats = %+v", res.Stats)
	}
	if got := daily(t, res, "UTC")["2026-01-06"].InputTokens; got != 3 {
		t.Errorf("input = %d, want 3", got)
	}
}

func TestMissingDir(t *testing.T) {
	t.Parallel()
	_, err := usagelog.ScanClaude(context.Background(), usagelog.Options{Dir: filepath.Join(t.TempDir(), "nope")})
	if err == nil || muster.ErrorCode(err) != muster.CodeInternal {
		t.Errorf("err = %v", err)
	}
}

func TestJSONGolden(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "p/s1.jsonl",
		line("m1", "r1", "claude-opus-4-5", "2026-01-07T10:00:00.000Z", "s1", 100, 10, ""),
		line("m2", "r2", "claude-sonnet-4-5-20250929", "2026-01-08T10:00:00.000Z", "s1", 1000, 20, `,"costUSD":0.25`),
	)
	res := scan(t, dir, usagelog.Options{})
	for _, bd := range []bool{false, true} {
		rep, err := usagelog.Aggregate(res, usagelog.Daily, usagelog.Filter{TZ: time.UTC}, bd)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := rep.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, fmt.Sprintf("testdata/daily_breakdown_%v.json", bd), buf.Bytes())
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.Check(t, path, got)
}

func TestDefaultDirsFromEnv(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	write(t, a, "p/s1.jsonl", line("m1", "r1", "claude-opus-4-5", "2026-01-09T10:00:00.000Z", "s1", 1, 0, ""))
	write(t, b, "p/s2.jsonl", line("m2", "r2", "claude-opus-4-5", "2026-01-09T10:00:00.000Z", "s2", 2, 0, ""))
	t.Setenv("CLAUDE_CONFIG_DIR", a+","+b)
	res, err := usagelog.ScanClaude(context.Background(), usagelog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := daily(t, res, "UTC")["2026-01-09"].InputTokens; got != 3 {
		t.Errorf("input = %d, want 3 from both folders", got)
	}
}

func TestDirMayNameProjectsFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "p/s1.jsonl", line("m1", "r1", "claude-opus-4-5", "2026-01-10T10:00:00.000Z", "s1", 5, 0, ""))
	res := scan(t, filepath.Join(dir, "projects"), usagelog.Options{})
	if res.Stats.Entries != 1 {
		t.Errorf("entries = %d", res.Stats.Entries)
	}
}
