package confine_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/internal/proc"
)

// needCgroups skips where no cgroup can enforce the limits (this
// machine's cgroup v1 pids and memory hierarchies can, as root).
func needCgroups(t *testing.T, pids int, memory int64) {
	t.Helper()
	if ok, why := proc.ProbeCgroups().Can(pids, memory); !ok {
		t.Skip(why)
	}
}

// limited runs script under sh confined by c with the limits (with or
// without the sandbox's namespaces), and returns its output and result.
func limited(t *testing.T, c *muster.Confinement, script string) (string, proc.Result) {
	t.Helper()
	needLandlock(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c.Launcher = exe
	if c.Namespaces {
		needNamespaces(t)
	}
	var mu sync.Mutex
	var out strings.Builder
	add := func(l string) { mu.Lock(); out.WriteString(l + "\n"); mu.Unlock() }
	res, err := proc.Run(context.Background(), proc.Spec{
		Argv: []string{"sh", "-c", script}, Dir: t.TempDir(), Confine: c,
		Env: append(os.Environ(), "LC_ALL=C"), OnLine: add, OnStderr: add,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), res
}

// forkBomb starts up to 200 sleepers, each a process (its inner shell
// ends at the first fork refused), and prints how
// many processes it sees then (a glob: no fork), which in the sandbox's
// PID namespace are all the invocation's: under max_pids the forks past
// the limit fail inside.
func forkBomb(secs string) string {
	return `
	sh -c 'for i in $(seq 200); do sleep ` + secs + ` & done' 2>/dev/null
	set -- /proc/[0-9]*
	echo "procs $#"
	exit 0
`
}

// TestSandboxForkBombStaysUnderMaxPids: a fork bomb in the sandbox gets
// no more than max_pids processes (the forks past it fail inside), the
// invocation reports the limit it reached, and its sleepers end with it.
func TestSandboxForkBombStaysUnderMaxPids(t *testing.T) {
	t.Parallel()
	needCgroups(t, 24, 0)
	out, res := limited(t, &muster.Confinement{Namespaces: true, HostNetwork: true, MaxPids: 24}, forkBomb("347"))
	if res.Limit != "max_pids" {
		t.Fatalf("limit %q, want max_pids (exit %d):\n%s", res.Limit, res.ExitCode, out)
	}
	n := procsLine(t, out)
	if n > 24 || n < 5 {
		t.Errorf("%d processes seen, want at most max_pids 24 (and some):\n%s", n, out)
	}
	if !strings.Contains(res.LimitReason(&muster.Confinement{MaxPids: 24}), "max_pids (24 processes)") {
		t.Errorf("reason %q", res.LimitReason(&muster.Confinement{MaxPids: 24}))
	}
	assertNoSleepers(t, "347")
}

// TestLandlockOnlyForkBombStaysUnderMaxPids: without namespaces (the
// fallback) the confinement step waits until muster placed it in its
// cgroup, so the bomb is bounded all the same, and the group's kill
// ends what the invocation left.
func TestLandlockOnlyForkBombStaysUnderMaxPids(t *testing.T) {
	t.Parallel()
	needCgroups(t, 24, 0)
	out, res := limited(t, &muster.Confinement{Writable: []string{os.TempDir()}, MaxPids: 24}, forkBomb("353"))
	if res.Limit != "max_pids" {
		t.Fatalf("limit %q, want max_pids (exit %d):\n%s", res.Limit, res.ExitCode, out)
	}
	assertNoSleepers(t, "353")
}

// TestSandboxMemoryHogKilledAtMaxMemory: a process that grows past
// max_memory is killed by the kernel, and the invocation names the
// limit.
func TestSandboxMemoryHogKilledAtMaxMemory(t *testing.T) {
	t.Parallel()
	needCgroups(t, 0, 64<<20)
	out, res := limited(t, &muster.Confinement{Namespaces: true, HostNetwork: true, MaxMemory: 64 << 20},
		`head -c 400000000 /dev/zero | tail -n 1 >/dev/null; echo "tail $?"`)
	if res.Limit != "max_memory" {
		t.Fatalf("limit %q, want max_memory (exit %d):\n%s", res.Limit, res.ExitCode, out)
	}
	if !strings.Contains(out, "tail 137\n") {
		t.Errorf("the hog was not killed (SIGKILL, 137):\n%s", out)
	}
}

// TestWithinLimitsNoLimitReported: an invocation well within its
// limits reports none, and its cgroup is gone after it.
func TestWithinLimitsNoLimitReported(t *testing.T) {
	t.Parallel()
	needCgroups(t, 64, 64<<20)
	out, res := limited(t, &muster.Confinement{Namespaces: true, HostNetwork: true, MaxPids: 64, MaxMemory: 64 << 20},
		`echo ok; cat /proc/self/cgroup`)
	if res.Limit != "" || res.ExitCode != 0 || !strings.Contains(out, "ok\n") {
		t.Fatalf("limit %q exit %d:\n%s", res.Limit, res.ExitCode, out)
	}
	// The invocation saw its own groups (/proc/self/cgroup): each is gone
	// once it ended.
	c := proc.ProbeCgroups()
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.Contains(parts[2], "/muster-") {
			continue
		}
		name := parts[2][strings.LastIndex(parts[2], "/")+1:]
		for _, dir := range []string{c.Pids, c.Memory} {
			if _, err := os.Stat(dir + "/" + name); err == nil {
				t.Errorf("the ended invocation's cgroup is left: %s/%s", dir, name)
			}
		}
		seen++
	}
	if seen == 0 {
		t.Errorf("the invocation was in no group of muster's:\n%s", out)
	}
}

func TestParseHold(t *testing.T) {
	t.Parallel()
	o, err := confine.ParseOptions([]string{"--hold", "4", "--ns", "--", "true"})
	if err != nil || o.Hold != 4 {
		t.Fatalf("%+v %v", o, err)
	}
	if _, err := confine.ParseOptions([]string{"--hold", "1", "--", "true"}); err == nil {
		t.Fatal("--hold 1 accepted")
	}
}

func procsLine(t *testing.T, out string) int {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "procs "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Fatalf("no procs line in:\n%s", out)
	return 0
}

// assertNoSleepers fails when a "sleep SECS" of the test survived (each
// test sleeps its own number of seconds: they run in parallel).
func assertNoSleepers(t *testing.T, secs string) {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if string(b) == "sleep\x00"+secs+"\x00" {
			st, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
			if !strings.Contains(string(st), ") Z ") {
				t.Errorf("sleeper %s outlived its invocation", e.Name())
			}
		}
	}
}

// TestCgroupCannotBeLeftOrLifted: a confined program that finds its own
// group in /proc/self/cgroup tries to move itself to the hierarchy's root
// (out of max_pids) and to lift its group's limit; both are refused (the
// mount namespace's /sys and Landlock allow no write there), in the
// sandbox and without namespaces.
func TestCgroupCannotBeLeftOrLifted(t *testing.T) {
	t.Parallel()
	needCgroups(t, 24, 0)
	script := `
		own=$(sed -n 's/^[0-9]*:pids:\(.*\)$/\1/p' /proc/self/cgroup)
		echo $$ > /sys/fs/cgroup/pids/cgroup.procs 2>/dev/null && echo LEFT || echo stayed
		echo max > "/sys/fs/cgroup/pids$own/pids.max" 2>/dev/null && echo LIFTED || echo kept
		mkdir "/sys/fs/cgroup/pids/escape-$$" 2>/dev/null && echo MADE || echo no-group`
	for name, c := range map[string]*muster.Confinement{
		"sandbox":       {Namespaces: true, HostNetwork: true, MaxPids: 24},
		"landlock-only": {Writable: []string{os.TempDir()}, MaxPids: 24},
	} {
		out, _ := limited(t, c, script)
		for _, want := range []string{"stayed", "kept", "no-group"} {
			if !strings.Contains(out, want+"\n") {
				t.Errorf("%s: %q missing:\n%s", name, want, out)
			}
		}
		for _, bad := range []string{"LEFT", "LIFTED", "MADE"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: the program %s its cgroup:\n%s", name, bad, out)
			}
		}
	}
}
