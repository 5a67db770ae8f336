package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
)

// TestMain stands in for muster should confinestart not catch
// muster __confine (the test binary would otherwise run its tests again,
// and those start it again).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == muster.ConfineCommand {
		os.Exit(confine.Main(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

// heavy are packages of the command tree, each with work to do at start,
// that a confined start must not initialise: the test binary links them
// as muster does (it holds package main and all it imports).
var heavy = []string{
	"github.com/nats-io/nats-server/v2/server",
	"github.com/nats-io/nats.go/jetstream",
	"github.com/muster-run/muster/fleet",
	"github.com/muster-run/muster/internal/agentkit",
	"github.com/google/go-github/v84/github",
	"github.com/spf13/cobra",
}

// initStat is one package's initialisation, as GODEBUG=inittrace=1
// reports it.
type initStat struct {
	pkg    string
	allocs int
}

// inits runs this test binary with args and GODEBUG=inittrace=1 and
// returns the packages initialised, in order, and the exit status.
func inits(t *testing.T, args ...string) ([]initStat, int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	// init PKG @0.5 ms, 0.1 ms clock, 1024 bytes, 12 allocs
	var out []initStat
	sc := bufio.NewScanner(strings.NewReader(stderr.String()))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 11 && f[0] == "init" && strings.HasPrefix(f[2], "@") && f[10] == "allocs" {
			n, _ := strconv.Atoi(f[9])
			out = append(out, initStat{f[1], n})
		}
	}
	return out, code
}

func names(stats []initStat) []string {
	out := make([]string, len(stats))
	for i, s := range stats {
		out[i] = s.pkg
	}
	return out
}

// TestConfineStartsEarly: muster __confine runs from confinestart's
// initialiser, before the command tree's heavy packages are initialised
// (which an ordinary start of the same binary does initialise).
func TestConfineStartsEarly(t *testing.T) {
	t.Parallel()
	ordinary, _ := inits(t, "-test.run=^$")
	stats, code := inits(t, muster.ConfineCommand, "--", "true")
	if code != 0 && code != 125 { // 125: the kernel cannot confine here
		t.Fatalf("muster __confine -- true: exit %d", code)
	}
	all, confined := names(ordinary), names(stats)
	if !slices.Contains(confined, "github.com/muster-run/muster/confine") {
		t.Fatalf("no init trace of the confine package: %q", confined)
	}
	for _, p := range heavy {
		if !slices.Contains(all, p) {
			t.Errorf("%s is not initialised at an ordinary start either: pick another heavy package", p)
		}
		if slices.Contains(confined, p) {
			t.Errorf("muster __confine initialised %s (%d of %d packages): a new import of confine's, or of confinestart's, initialises late", p, len(confined), len(all))
		}
	}
}

// maxInitAllocs bounds what each of muster's packages allocates when it
// is initialised: a package-level regexp.MustCompile costs tens to
// hundreds (a bounded repeat such as {0,99}, over a thousand) and a
// confined start initialises most packages (see confinestart). Compile
// on first use instead (sync.OnceValue).
const maxInitAllocs = 200

// TestInitsCheap: no package of muster's does much at start.
func TestInitsCheap(t *testing.T) {
	t.Parallel()
	stats, _ := inits(t, "-test.run=^$")
	ours := 0
	for _, s := range stats {
		if !strings.HasPrefix(s.pkg, "github.com/muster-run/muster") {
			continue
		}
		ours++
		if s.allocs > maxInitAllocs {
			t.Errorf("initialising %s allocates %d times (at most %d): make its package-level work lazy", s.pkg, s.allocs, maxInitAllocs)
		}
	}
	if ours == 0 {
		t.Fatal("no init trace of muster's packages")
	}
}

// TestConfineExitStatus: the program's exit status and the
// ConfineCommand's own failures come out of muster unchanged.
func TestConfineExitStatus(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want := 7
	if !confine.Probe().Available() {
		want = 125
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{muster.ConfineCommand, "--", "sh", "-c", "exit 7"}, want},
		{[]string{muster.ConfineCommand, "--no-such-option", "--", "true"}, 125},
	} {
		err := exec.Command(exe, c.args...).Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != c.want {
			t.Errorf("%q: %v, want exit %d", c.args, err, c.want)
		}
	}
}
