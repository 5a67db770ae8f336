package confine_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/internal/proc"
)

// fakeLauncher installs a shell script as the launcher beside a muster
// at dir/muster, and returns that muster's path.
func fakeLauncher(t *testing.T, script string) string {
	t.Helper()
	dir := t.TempDir()
	if script != "" {
		if err := os.WriteFile(filepath.Join(dir, confine.LauncherName), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "muster")
}

// TestLauncherChoice: muster hands its sandboxes to the launcher beside
// it only when that one answers with its own protocol (and build, where
// both recorded one); otherwise it confines with its own executable,
// and says why when a launcher is there but cannot serve.
func TestLauncherChoice(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, script string
		chosen       bool
		warning      string // a fragment; "" for none
	}{
		{name: "none installed"},
		{name: "the same protocol", script: "echo '" + confine.Identity() + "'", chosen: true},
		{name: "the same protocol, no build recorded", script: "echo 'protocol " + strconv.Itoa(confine.Protocol) + "'", chosen: true},
		{name: "another protocol", script: "echo 'protocol 999'", warning: "from another build of muster"},
		{name: "an old launcher that knows no --version", script: "echo 'unknown argument' >&2; exit 125", warning: "does not run"},
		{name: "not executable", script: "", warning: ""},
		// The red team's: a child holding the output, a flood.
		{name: "a child holds its output", script: "sleep 30 & echo 'protocol " + strconv.Itoa(confine.Protocol) + "'", chosen: true},
		{name: "a flood", script: "head -c 100000000 /dev/zero", warning: "from another build"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			exe := fakeLauncher(t, tc.script)
			if tc.name == "not executable" {
				if err := os.WriteFile(filepath.Join(filepath.Dir(exe), confine.LauncherName), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
				tc.warning = "does not run"
			}
			t0 := time.Now()
			got, warning := confine.Launcher(exe)
			if took := time.Since(t0); took > 10*time.Second {
				t.Errorf("Launcher took %v: muster waits for no child of the launcher", took)
			}
			want := exe
			if tc.chosen {
				want = filepath.Join(filepath.Dir(exe), confine.LauncherName)
			}
			if got != want {
				t.Errorf("Launcher = %s, want %s", got, want)
			}
			if (tc.warning == "") != (warning == "") || !strings.Contains(warning, tc.warning) {
				t.Errorf("warning %q, want one with %q", warning, tc.warning)
			}
			if warning != "" && !strings.Contains(warning, "reinstall") {
				t.Errorf("the warning says not how to mend it: %q", warning)
			}
		})
	}
}

// TestLauncherStartsTheSandbox: the real launcher (cmd/muster-confine)
// answers muster, refuses to be run by hand, and starts the sandbox as
// its PID 1, the program confined below it.
func TestLauncherStartsTheSandbox(t *testing.T) {
	t.Parallel()
	needNamespaces(t)
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+"/", "github.com/muster-run/muster/cmd/muster-confine")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	launcher, warning := confine.Launcher(filepath.Join(dir, "muster"))
	if warning != "" || launcher != filepath.Join(dir, confine.LauncherName) {
		t.Fatalf("Launcher = %s, %q: want the launcher just built", launcher, warning)
	}
	if out, err := exec.Command(launcher, "run").CombinedOutput(); err == nil || !strings.Contains(string(out), "not run by hand") {
		t.Errorf("the launcher run by hand: %v, %s", err, out)
	}
	if r := confine.ProbeNamespaces(launcher); r != "" {
		t.Fatalf("the launcher cannot build the namespaces the test binary can: %s", r)
	}
	clone := hostTmp(t)
	var mu sync.Mutex
	var out strings.Builder
	add := func(l string) { mu.Lock(); out.WriteString(l + "\n"); mu.Unlock() }
	res, err := proc.Run(context.Background(), proc.Spec{
		Argv: []string{"sh", "-c", `tr '\0' ' ' </proc/1/cmdline; echo; grep '^NoNewPrivs:' /proc/self/status | tr -d ' \t'; echo ok > made`},
		Dir:  clone, OnLine: add, OnStderr: add,
		Confine: &muster.Confinement{Launcher: launcher, Writable: []string{clone}, Namespaces: true},
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v exit %d:\n%s", err, res.ExitCode, out.String())
	}
	if !strings.HasPrefix(out.String(), launcher+" "+muster.ConfineCommand+" ") {
		t.Errorf("PID 1 of the sandbox is not the launcher:\n%s", out.String())
	}
	wantLines(t, out.String(), "NoNewPrivs:1")
	if _, err := os.Stat(filepath.Join(clone, "made")); err != nil {
		t.Errorf("the program could not write its clone: %v", err)
	}
}

// TestLauncherCompatible: the same protocol and, where both recorded
// one, the same build.
func TestLauncherCompatible(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ours, theirs string
		want         bool
	}{
		{"protocol 1 build abc", "protocol 1 build abc", true},
		{"protocol 1 build abc", "protocol 1 build abd", false},
		{"protocol 1 build abc", "protocol 1 build abc+modified", false},
		{"protocol 1 build abc", "protocol 1", true},
		{"protocol 1", "protocol 1 build abc", true},
		{"protocol 1", "protocol 2", false},
		{"protocol 1 build v1.2.0", "protocol 2 build v1.2.0", false},
		{"protocol 1", "protocol 10", false},
		{"protocol 1", "", false},
		{"protocol 1", "protocol 1\nbuild x", false},
	} {
		if got := confine.Compatible(tc.ours, tc.theirs); got != tc.want {
			t.Errorf("compatible(%q, %q) = %v, want %v", tc.ours, tc.theirs, got, tc.want)
		}
	}
}

// TestProtocolPinsTheOptions: the options the ConfineCommand takes are
// those of confine.Protocol. An option added, removed or renamed fails
// this test until Protocol is bumped (so that a muster never hands its
// sandboxes to a launcher of another protocol) and the copy below
// updated.
func TestProtocolPinsTheOptions(t *testing.T) {
	t.Parallel()
	pinned := map[int]string{
		1: "want [--hold FD] [--write PATH]... [--ro PATH]... [--hide PATH]... [--ns [--host-net] [--bridge PORT] [--grace D] [--life FD]] -- PROGRAM [ARG]...",
		// --grace and --life without --ns: the launcher supervises
		// there too (runAlone).
		2: "want [--hold FD] [--write PATH]... [--ro PATH]... [--hide PATH]... [--grace D] [--life FD] [--ns [--host-net] [--bridge PORT]] -- PROGRAM [ARG]...",
		// --protocol in every call: a launcher replaced under a running
		// muster refuses what it would read otherwise.
		3: "want [--protocol N] [--hold FD] [--write PATH]... [--ro PATH]... [--hide PATH]... [--grace D] [--life FD] [--ns [--host-net] [--bridge PORT]] -- PROGRAM [ARG]...",
	}
	if got := pinned[confine.Protocol]; got != confine.Usage {
		t.Errorf("the ConfineCommand's options are not those pinned for protocol %d:\n got %s\nwant %s\nbump confine.Protocol and pin the new options here", confine.Protocol, confine.Usage, got)
	}
}

// TestLauncherRefusesAnotherProtocol (the red team's): the protocol
// travels with every invocation, so a launcher replaced by one of
// another release while muster runs (Launcher checked it once) refuses
// it (exit 125, saying why) instead of reading its arguments otherwise.
func TestLauncherRefusesAnotherProtocol(t *testing.T) {
	t.Parallel()
	args := (&muster.Confinement{Launcher: "/x/muster", Writable: []string{"/w"}}).Prefix()
	if len(args) < 4 || args[2] != "--protocol" || args[3] != strconv.Itoa(confine.Protocol) {
		t.Fatalf("the launcher's command line does not carry the protocol: %q", args)
	}
	var buf bytes.Buffer
	if code := confine.Main([]string{"--protocol", "999", "--write", "/w", "--", "true"}, &buf); code != 125 || !strings.Contains(buf.String(), "same one") {
		t.Errorf("another protocol: exit %d, %q", code, buf.String())
	}
}
