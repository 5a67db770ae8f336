package confine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
)

// TestSandboxSocketsNamedByEnvUnreachable: the red team's attack on a
// tmux server whose socket lies outside /tmp and /run (TMUX_TMPDIR, or
// tmux -S, as the TMUX variable of a shell in it names): the mount
// namespace's private /tmp and empty /run do not cover it, and Landlock
// below ABI 9 does not govern connecting to it, so a confined agent
// drove the user's terminal. The socket a variable names is hidden.
func TestSandboxSocketsNamedByEnvUnreachable(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("no tmux")
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp(wd, "sock-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	sock := filepath.Join(root, "tmux-sock")
	server := exec.Command(tmux, "-S", sock, "-f", "/dev/null", "new-session", "-d", "sleep 600")
	server.Env = append(os.Environ(), "SHELL=/bin/sh")
	if out, err := server.CombinedOutput(); err != nil {
		t.Skipf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", sock, "kill-server").Run() })
	t.Setenv("TMUX", sock+",1234,0")
	clone := filepath.Join(root, "clone")
	if err := os.Mkdir(clone, 0o755); err != nil {
		t.Fatal(err)
	}
	pwned := filepath.Join(clone, "pwned")
	out, _ := sandboxed(t, &muster.Confinement{Writable: []string{clone}, Hide: confine.DefaultHide("")}, clone,
		`tmux -S "$SOCK" new-window "touch $PWNED" 2>/dev/null && echo DROVE || echo no-tmux`, "SOCK="+sock, "PWNED="+pwned)
	wantLines(t, out, "no-tmux")
	if strings.Contains(out, "DROVE") {
		t.Errorf("the sandbox drove the user's tmux:\n%s", out)
	}
	if out, err := exec.Command(tmux, "-S", sock, "list-sessions").CombinedOutput(); err != nil {
		t.Fatalf("tmux server gone: %v %s", err, out)
	}
}

// TestSocketsNamedByEnv: the sockets the user's environment names
// (tmux's, ssh-agent's, Docker's, D-Bus's) are on the hide list, not on
// Landlock's (which cannot govern connecting to them below ABI 9).
func TestSocketsNamedByEnv(t *testing.T) {
	t.Setenv("TMUX", "/s/tmux-0/default,99,0")
	t.Setenv("TMUX_TMPDIR", "/s/tmuxdir")
	t.Setenv("SSH_AUTH_SOCK", "/s/agent.sock")
	t.Setenv("DOCKER_HOST", "unix:///s/docker.sock")
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/s/bus,guid=1")
	want := []string{"/s/tmux-0/default", "/s/tmuxdir/tmux-" + strconv.Itoa(os.Getuid()), "/s/agent.sock", "/s/docker.sock", "/s/bus"}
	hide := confine.DefaultHide("")
	ll := confine.LandlockHide("")
	for _, w := range want {
		if !slices.Contains(hide, w) {
			t.Errorf("DefaultHide lacks %s: %v", w, hide)
		}
		if slices.Contains(ll, w) {
			t.Errorf("LandlockHide holds %s", w)
		}
	}
	t.Setenv("DOCKER_HOST", "tcp://h:2375")
	t.Setenv("TMUX", "relative,1,0")
	for _, p := range confine.DefaultHide("") {
		if !filepath.IsAbs(p) {
			t.Errorf("relative path hidden: %s", p)
		}
	}
}
