package report_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/report"
)

// TestDemoJournal builds a report from the journal of a real `muster
// demo` run (two simulated executors of two clones each).
func TestDemoJournal(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/demo-journal.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []muster.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e muster.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	r := report.Build([][]muster.Event{events}, report.Options{TZ: time.UTC, Now: events[len(events)-1].Time})
	if len(r.ByClone) != 4 {
		t.Errorf("clones: %+v", r.ByClone)
	}
	sum, cost := 0.0, int64(0)
	for _, l := range r.ByClone {
		if !strings.Contains(l.Key, "#") {
			t.Errorf("clone key %q", l.Key)
		}
		sum += l.SharePercent
		cost += l.CostMicros
	}
	if math.Abs(sum-100) > 1e-9 || cost != r.Totals.CostMicros || r.Totals.CostMicros == 0 {
		t.Errorf("shares %v, clone cost %d, total %d", sum, cost, r.Totals.CostMicros)
	}
	if r.Runs[0].State != muster.RunSucceeded || r.SucceededTasks != 10 || r.Runs[0].CostPerDayMicros != 0 {
		t.Errorf("run %+v, succeeded %d", r.Runs[0], r.SucceededTasks)
	}
	var buf bytes.Buffer
	if err := report.Write(&buf, r, "text"); err != nil || !strings.Contains(buf.String(), "By executor clone") {
		t.Errorf("text: %v\n%s", err, buf.String())
	}
}
