package engine_test

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine/enginetest"
)

// randomDAG builds n tasks; each depends on up to 3 of the 50 tasks
// before it, and takes 1..120 s (log-uniform: many short, a few long).
func randomDAG(n int, rng *rand.Rand) (*muster.Plan, map[muster.TaskID]time.Duration) {
	p := &muster.Plan{}
	dur := map[muster.TaskID]time.Duration{}
	for i := 0; i < n; i++ {
		t := &muster.Task{ID: muster.TaskID(fmt.Sprintf("t%04d", i)), Title: "x"}
		if i > 0 {
			for k := rng.Intn(4); k > 0; k-- {
				lo := i - 50
				if lo < 0 {
					lo = 0
				}
				d := muster.TaskID(fmt.Sprintf("t%04d", lo+rng.Intn(i-lo)))
				if !containsID(t.After, d) {
					t.After = append(t.After, d)
				}
			}
		}
		p.Tasks = append(p.Tasks, t)
		dur[t.ID] = time.Duration(math.Exp(rng.Float64()*math.Log(120))*1000) * time.Millisecond
	}
	return p, dur
}

func containsID(ids []muster.TaskID, id muster.TaskID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// lowerBound is max(critical path, total work / clones).
func lowerBound(p *muster.Plan, dur map[muster.TaskID]time.Duration, clones int) time.Duration {
	finish := map[muster.TaskID]time.Duration{}
	var cp, work time.Duration
	for _, t := range p.Tasks { // plan order is topological here
		var start time.Duration
		for _, d := range t.After {
			if finish[d] > start {
				start = finish[d]
			}
		}
		finish[t.ID] = start + dur[t.ID]
		if finish[t.ID] > cp {
			cp = finish[t.ID]
		}
		work += dur[t.ID]
	}
	if w := work / time.Duration(clones); w > cp {
		return w
	}
	return cp
}

// waveMakespan schedules level by level with a barrier between levels,
// longest task first within a level, as wave-based schedulers do.
func waveMakespan(p *muster.Plan, dur map[muster.TaskID]time.Duration, clones int) time.Duration {
	level := map[muster.TaskID]int{}
	levels := [][]muster.TaskID{}
	for _, t := range p.Tasks {
		l := 0
		for _, d := range t.After {
			if level[d]+1 > l {
				l = level[d] + 1
			}
		}
		level[t.ID] = l
		for len(levels) <= l {
			levels = append(levels, nil)
		}
		levels[l] = append(levels[l], t.ID)
	}
	var total time.Duration
	for _, ids := range levels {
		sort.Slice(ids, func(i, j int) bool { return dur[ids[i]] > dur[ids[j]] })
		loads := make([]time.Duration, clones)
		for _, id := range ids {
			least := 0
			for c := range loads {
				if loads[c] < loads[least] {
					least = c
				}
			}
			loads[least] += dur[id]
		}
		var span time.Duration
		for _, l := range loads {
			if l > span {
				span = l
			}
		}
		total += span
	}
	return total
}

// BenchmarkScheduleQuality reports makespan / lower bound on random DAGs
// of 2,000 tasks over 16 clones, for muster's scheduler (with expected
// durations known, and with equal weights) and for wave barriers.
func BenchmarkScheduleQuality(b *testing.B) {
	const n, clones = 2000, 16
	var sumKnown, sumEqual, sumWave float64
	for i := 0; i < b.N; i++ {
		rng := rand.New(rand.NewSource(int64(i + 1)))
		p, dur := randomDAG(n, rng)
		lb := lowerBound(p, dur, clones)
		run := func(weights bool) time.Duration {
			sim, err := enginetest.New(p, enginetest.Crew(clones), t0)
			if err != nil {
				b.Fatal(err)
			}
			if weights {
				w := map[muster.TaskID]float64{}
				for id, d := range dur {
					w[id] = d.Seconds()
				}
				sim.State.SetWeights(w)
			}
			sim.Script = func(id muster.TaskID, _ int) enginetest.Outcome { return enginetest.Outcome{Duration: dur[id]} }
			span, err := sim.Run()
			if err != nil {
				b.Fatal(err)
			}
			return span
		}
		sumKnown += float64(run(true)) / float64(lb)
		sumEqual += float64(run(false)) / float64(lb)
		sumWave += float64(waveMakespan(p, dur, clones)) / float64(lb)
	}
	b.ReportMetric(sumKnown/float64(b.N), "ratio-known")
	b.ReportMetric(sumEqual/float64(b.N), "ratio-equal")
	b.ReportMetric(sumWave/float64(b.N), "ratio-waves")
}
