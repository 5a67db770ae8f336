// Command usagebench generates a synthetic Claude Code log corpus and
// times `muster usage claude daily --json` against ccusage on it,
// comparing per-day tokens and costs.
//
//	go run ./internal/cmd/usagebench -size 400 -runs 5
//	go run ./internal/cmd/usagebench -single -size 1024   # one 1 GB file, memory only
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "usagebench:", err)
		os.Exit(1)
	}
}

type measure struct {
	wall   time.Duration
	cpu    time.Duration // user + system
	rssKB  int64
	stdout []byte
}

func run() error {
	var (
		dir     = flag.String("dir", ".cache/usagebench/corpus", "corpus folder (CLAUDE_CONFIG_DIR); generated when missing")
		sizeMB  = flag.Int64("size", 400, "corpus size in MB")
		runs    = flag.Int("runs", 5, "timed runs of each tool")
		single  = flag.Bool("single", false, "generate one big file and check muster's memory only")
		ccusage = flag.String("ccusage", ".cache/ccusage/node_modules/@ccusage/ccusage-linux-x64/bin/ccusage", "ccusage native binary (npm install --prefix .cache/ccusage ccusage@20.0.24)")
		muster  = flag.String("muster", "", "muster binary (default: build ./internal/cmd/usagebench/musterusage into .cache/usagebench)")
		regen   = flag.Bool("regen", false, "regenerate the corpus even if it exists")
		seed    = flag.Uint64("seed", 1, "generator seed")
		genOnly = flag.Bool("gen-only", false, "only generate the corpus")
	)
	flag.Parse()
	if *single && *dir == ".cache/usagebench/corpus" {
		*dir = ".cache/usagebench/single"
	}
	if _, err := os.Stat(filepath.Join(*dir, "projects")); err != nil || *regen {
		o := genOptions{Dir: *dir, Size: *sizeMB << 20, Projects: 40, Days: 90, Big: 4, BigSize: 25 << 20, Seed: *seed, Single: *single}
		if *sizeMB < 200 {
			o.Big, o.BigSize = 1, *sizeMB<<20/10
		}
		if err := regenerate(o); err != nil {
			return err
		}
	}
	if *genOnly {
		return nil
	}
	bin, err := musterBinary(*muster)
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(*dir)
	mArgs := []string{"claude", "daily", "--json", "--tz", "UTC", "--dir", abs}
	home, _ := os.MkdirTemp("", "usagebench-home")
	defer os.RemoveAll(home)
	cEnv := []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + abs, "CODEX_HOME=" + filepath.Join(home, "nocodex"), "TZ=UTC", "PATH=" + os.Getenv("PATH")}
	cArgs := []string{"claude", "daily", "--json", "--offline", "--timezone", "UTC"}
	haveCC := true
	if _, err := os.Stat(*ccusage); err != nil {
		fmt.Println("ccusage not installed; timing muster only")
		haveCC = false
	}
	if *single {
		cc := ""
		if haveCC {
			cc = *ccusage
		}
		return singleFile(bin, mArgs, cc, cArgs, cEnv)
	}
	// Warm the page cache once each.
	mw, err := timeRun(bin, mArgs, nil)
	if err != nil {
		return err
	}
	var cw measure
	if haveCC {
		if cw, err = timeRun(*ccusage, cArgs, cEnv); err != nil {
			return err
		}
	}
	var ms, cs []measure
	for i := 0; i < *runs; i++ {
		m, err := timeRun(bin, mArgs, nil)
		if err != nil {
			return err
		}
		ms = append(ms, m)
		if haveCC {
			c, err := timeRun(*ccusage, cArgs, cEnv)
			if err != nil {
				return err
			}
			cs = append(cs, c)
		}
	}
	mMed, mRSS, mCPU := medians(ms)
	fmt.Printf("date: %s\ncorpus: %s\n", time.Now().UTC().Format(time.RFC3339), abs)
	fmt.Printf("muster usage claude daily --json: median wall %s, CPU %s, peak RSS %.1f MB (runs: %s)\n", mMed.Round(time.Millisecond), mCPU.Round(time.Millisecond), float64(mRSS)/1024, walls(ms))
	if !haveCC {
		return nil
	}
	cMed, cRSS, cCPU := medians(cs)
	fmt.Printf("ccusage 20.0.24 claude daily --json --offline: median wall %s, CPU %s, peak RSS %.1f MB (runs: %s)\n", cMed.Round(time.Millisecond), cCPU.Round(time.Millisecond), float64(cRSS)/1024, walls(cs))
	fmt.Printf("ratio muster/ccusage: wall %.2fx, CPU %.2fx, peak RSS %.2fx\n", float64(mMed)/float64(cMed), float64(mCPU)/float64(cCPU), float64(mRSS)/float64(cRSS))
	return compare(mw.stdout, cw.stdout)
}

// regenerate writes the corpus o describes afresh.
func regenerate(o genOptions) error {
	os.RemoveAll(o.Dir)
	start := time.Now()
	st, err := generate(o)
	if err != nil {
		return err
	}
	fmt.Printf("generated %s: %d files, %.0f MB, %d lines (%d assistant, %d junk) in %s\n",
		o.Dir, st.Files, float64(st.Bytes)/(1<<20), st.Lines, st.Assistant, st.Junk, time.Since(start).Round(time.Millisecond))
	return nil
}

// musterBinary is the muster usage binary to time: bin, else one built
// into .cache/usagebench.
func musterBinary(bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	bin = ".cache/usagebench/musterusage"
	b := exec.Command("go", "build", "-o", bin, "./internal/cmd/usagebench/musterusage")
	b.Stderr = os.Stderr
	if err := b.Run(); err != nil {
		return "", fmt.Errorf("build muster: %w", err)
	}
	return bin, nil
}

// singleFile times one run of muster over the one-file corpus, and of
// ccusage when it is installed (cc not ""), and compares their output.
func singleFile(bin string, mArgs []string, cc string, cArgs, cEnv []string) error {
	m, err := timeRun(bin, mArgs, nil)
	if err != nil {
		return err
	}
	fmt.Printf("single file: muster wall %s, CPU %s, peak RSS %.1f MB\n", m.wall.Round(time.Millisecond), m.cpu.Round(time.Millisecond), float64(m.rssKB)/1024)
	if cc == "" {
		return nil
	}
	c, err := timeRun(cc, cArgs, cEnv)
	if err != nil {
		return err
	}
	fmt.Printf("single file: ccusage wall %s, CPU %s, peak RSS %.1f MB\n", c.wall.Round(time.Millisecond), c.cpu.Round(time.Millisecond), float64(c.rssKB)/1024)
	return compare(m.stdout, c.stdout)
}

func walls(ms []measure) string {
	s := ""
	for i, m := range ms {
		if i > 0 {
			s += " "
		}
		s += m.wall.Round(time.Millisecond).String()
	}
	return s
}

// medians returns the median wall time, peak RSS (KB) and CPU time.
func medians(ms []measure) (time.Duration, int64, time.Duration) {
	w := make([]time.Duration, len(ms))
	c := make([]time.Duration, len(ms))
	r := make([]int64, len(ms))
	for i, m := range ms {
		w[i], r[i], c[i] = m.wall, m.rssKB, m.cpu
	}
	sort.Slice(w, func(i, j int) bool { return w[i] < w[j] })
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	sort.Slice(r, func(i, j int) bool { return r[i] < r[j] })
	return w[len(w)/2], r[len(r)/2], c[len(c)/2]
}

// timeRun runs a command and measures wall time and peak RSS (wait4
// rusage of the child).
func timeRun(bin string, args, env []string) (measure, error) {
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = env
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return measure{}, fmt.Errorf("%s: %w: %s", bin, err, errb.String())
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	m := measure{wall: wall, stdout: out.Bytes()}
	if ru != nil {
		m.rssKB = ru.Maxrss
		m.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return m, nil
}

type day struct {
	in, out, cw, cr int64
	cost            float64
}

// compare checks per-day tokens (identical) and costs (within 0.5%).
func compare(musterOut, ccOut []byte) error {
	var m struct {
		Rows []struct {
			Key  string  `json:"key"`
			In   int64   `json:"input_tokens"`
			Out  int64   `json:"output_tokens"`
			CW   int64   `json:"cache_write_tokens"`
			CR   int64   `json:"cache_read_tokens"`
			Cost float64 `json:"cost_usd"`
		} `json:"rows"`
	}
	var c struct {
		Daily []struct {
			Date string  `json:"date"`
			In   int64   `json:"inputTokens"`
			Out  int64   `json:"outputTokens"`
			CW   int64   `json:"cacheCreationTokens"`
			CR   int64   `json:"cacheReadTokens"`
			Cost float64 `json:"totalCost"`
		} `json:"daily"`
	}
	if err := json.Unmarshal(musterOut, &m); err != nil {
		return fmt.Errorf("muster output: %w", err)
	}
	if err := json.Unmarshal(ccOut, &c); err != nil {
		return fmt.Errorf("ccusage output: %w", err)
	}
	md, cd := map[string]day{}, map[string]day{}
	var mt, ct day
	for _, r := range m.Rows {
		md[r.Key] = day{r.In, r.Out, r.CW, r.CR, r.Cost}
		mt = day{mt.in + r.In, mt.out + r.Out, mt.cw + r.CW, mt.cr + r.CR, mt.cost + r.Cost}
	}
	for _, r := range c.Daily {
		cd[r.Date] = day{r.In, r.Out, r.CW, r.CR, r.Cost}
		ct = day{ct.in + r.In, ct.out + r.Out, ct.cw + r.CW, ct.cr + r.CR, ct.cost + r.Cost}
	}
	tokDiff, worst := 0, 0.0
	for k, a := range md {
		b, ok := cd[k]
		if !ok || a.in != b.in || a.out != b.out || a.cw != b.cw || a.cr != b.cr {
			tokDiff++
			if tokDiff <= 5 {
				fmt.Printf("  tokens differ on %s: muster %+v ccusage %+v\n", k, a, b)
			}
		}
		if ok && b.cost > 0 {
			worst = math.Max(worst, math.Abs(a.cost-b.cost)/b.cost)
		}
	}
	for k := range cd {
		if _, ok := md[k]; !ok {
			tokDiff++
		}
	}
	fmt.Printf("days: muster %d, ccusage %d; days with different tokens: %d\n", len(md), len(cd), tokDiff)
	fmt.Printf("totals: muster in %d out %d cw %d cr %d $%.2f; ccusage in %d out %d cw %d cr %d $%.2f\n",
		mt.in, mt.out, mt.cw, mt.cr, mt.cost, ct.in, ct.out, ct.cw, ct.cr, ct.cost)
	fmt.Printf("cost: worst day differs by %.4f%%, total by %.4f%%\n", worst*100, math.Abs(mt.cost-ct.cost)/ct.cost*100)
	if tokDiff > 0 || worst > 0.005 {
		return fmt.Errorf("outputs differ")
	}
	return nil
}
