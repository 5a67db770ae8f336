package confine_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/internal/proc"
)

// needNamespaces skips where the sandbox's namespaces cannot be built
// (and says why), and returns the launcher: this test binary.
func needNamespaces(t testing.TB) string {
	t.Helper()
	needLandlock(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if r := confine.ProbeNamespaces(exe); r != "" {
		t.Skip(r)
	}
	return exe
}

// sandboxed runs script under sh in the sandbox c (its Launcher set
// here), in dir, and returns stdout and stderr together and the exit
// status.
func sandboxed(t *testing.T, c *muster.Confinement, dir, script string, env ...string) (string, int) {
	t.Helper()
	c.Launcher = needNamespaces(t)
	c.Namespaces = true
	var mu sync.Mutex
	var out strings.Builder
	add := func(l string) { mu.Lock(); out.WriteString(l + "\n"); mu.Unlock() }
	res, err := proc.Run(context.Background(), proc.Spec{
		Argv: []string{"sh", "-c", script}, Dir: dir, Confine: c,
		Env: append(append(os.Environ(), "LC_ALL=C"), env...), OnLine: add, OnStderr: add,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), res.ExitCode
}

// hostTmp returns a new directory under /tmp itself (not TMPDIR), where
// muster's tests and `muster demo` keep repositories.
func hostTmp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/tmp", "muster-ns-test-")
	if err != nil {
		t.Skipf("no /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func wantLines(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("missing %q in:\n%s", w, out)
		}
	}
}

// TestSandboxPrivateTmpAndBindBack: the invocation's /tmp is its own
// (nothing of the host's /tmp is seen, nothing it writes there reaches
// the host), its clone under /tmp is bound back writable, the user's
// repository under /tmp read-only, and a hidden path is empty.
func TestSandboxPrivateTmpAndBindBack(t *testing.T) {
	t.Parallel()
	root := hostTmp(t)
	clone, repo, other := filepath.Join(root, "clone"), filepath.Join(root, "repo"), filepath.Join(root, "other")
	secret := filepath.Join(repo, "creds") // hidden inside a read-only bind
	for _, d := range []string{clone, repo, other, secret} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(other, "theirs"), filepath.Join(repo, "main.go"), filepath.Join(secret, "key")} {
		if err := os.WriteFile(f, []byte("host\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := sandboxed(t, &muster.Confinement{Writable: []string{clone}, ReadOnly: []string{repo}, Hide: []string{secret}}, clone, `
		cat "$OTHER/theirs" 2>/dev/null || echo no-other
		echo mine > /tmp/own && cat /tmp/own
		echo work > "$CLONE/made" && echo ok-clone
		cat "$REPO/main.go"
		echo x > "$REPO/main.go" 2>/dev/null || echo ro-repo
		ls -A "$SECRET" | wc -l | tr -d ' '
		echo x > /dev/shm/own && echo ok-shm
	`, "OTHER="+other, "CLONE="+clone, "REPO="+repo, "SECRET="+secret)
	wantLines(t, out, "no-other", "mine", "ok-clone", "host", "ro-repo", "0", "ok-shm")
	if _, err := os.Stat("/tmp/own"); err == nil {
		t.Error("the sandbox's /tmp/own reached the host")
	}
	if b, _ := os.ReadFile(filepath.Join(clone, "made")); string(b) != "work\n" {
		t.Errorf("clone write: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "main.go")); string(b) != "host\n" {
		t.Errorf("repository changed: %q", b)
	}
}

// TestSandboxReadOnlyInsideWritable: a path bound read-only inside a
// writable bind-back (a clone's setup outputs, node_modules/, under a
// clone that lies in /tmp and so is bound back over the private /tmp)
// stays read-only: writing, removing or moving it aside fails, while the
// rest of the clone is writable (ARCHITECTURE §8.5).
func TestSandboxReadOnlyInsideWritable(t *testing.T) {
	t.Parallel()
	clone := filepath.Join(hostTmp(t), "clone")
	nm := filepath.Join(clone, "node_modules", "x")
	if err := os.MkdirAll(nm, 0o755); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(nm, "index.js")
	if err := os.WriteFile(index, []byte("installed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := sandboxed(t, &muster.Confinement{Writable: []string{clone}, ReadOnly: []string{filepath.Join(clone, "node_modules")}}, clone, `
		echo work > made && echo ok-clone
		echo evil > node_modules/x/index.js 2>/dev/null || echo ro-write
		rm -rf node_modules 2>/dev/null || echo ro-remove
		mv node_modules elsewhere 2>/dev/null || echo ro-move
		cat node_modules/x/index.js
	`)
	wantLines(t, out, "ok-clone", "ro-write", "ro-remove", "ro-move", "installed")
	if b, _ := os.ReadFile(index); string(b) != "installed\n" {
		t.Errorf("setup output changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(clone, "made")); string(b) != "work\n" {
		t.Errorf("clone write: %q", b)
	}
}

// TestSandboxRootPowersGone: even as root, the program holds no
// capability: mknod fails in its writable places, and a fresh /proc
// shows no process outside the namespace (muster's environ is not there
// to read).
func TestSandboxRootPowersGone(t *testing.T) {
	t.Parallel()
	clone := hostTmp(t)
	out, _ := sandboxed(t, &muster.Confinement{Writable: []string{clone}}, clone, `
		mknod "$PWD/kmsg" c 1 11 2>/dev/null && echo MKNOD || echo no-mknod
		mknod /tmp/null c 1 3 2>/dev/null && echo MKNOD || echo no-mknod-tmp
		grep -E '^Cap(Eff|Prm|Bnd|Amb|Inh):' /proc/self/status | awk '{print $2}' | sort -u
		ls /proc | grep -c '^[0-9]'
		cat /proc/$MUSTER_PID/environ >/dev/null 2>&1 && echo READ-ENVIRON || echo no-environ
	`, fmt.Sprintf("MUSTER_PID=%d", os.Getpid()))
	wantLines(t, out, "no-mknod", "no-mknod-tmp", "0000000000000000", "no-environ")
	if strings.Contains(out, "MKNOD") || strings.Contains(out, "READ-ENVIRON") {
		t.Errorf("mknod worked:\n%s", out)
	}
	// sh, the pipeline's processes and stage one: a handful, never the
	// machine's.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var n int
	if _, err := fmt.Sscan(lines[len(lines)-2], &n); err != nil || n > 8 {
		t.Errorf("the sandbox's /proc lists %q processes:\n%s", lines[len(lines)-2], out)
	}
	if _, err := os.Stat(filepath.Join(clone, "kmsg")); err == nil {
		t.Error("a device node appeared in the clone")
	}
}

// TestSandboxSurvivorDies: a process that clears its environment and
// leaves the session (env -i setsid -f) is dead once Run returns: it
// cannot swap the tree after muster staged it.
func TestSandboxSurvivorDies(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	clone := hostTmp(t)
	token := fmt.Sprintf("survivor-%d", os.Getpid())
	out, code := sandboxed(t, &muster.Confinement{Writable: []string{clone}}, clone, `
		env -i setsid -f sh -c 'sleep 3; echo swapped > "$1/tree"; exec sleep 1000' `+token+` "$PWD" </dev/null >/dev/null 2>&1
		echo started`)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, p := range hostProcesses(t) {
		if strings.Contains(p, token) {
			t.Errorf("a survivor outlived its invocation: %s", p)
		}
	}
	if _, err := os.Stat(filepath.Join(clone, "tree")); err == nil {
		t.Error("the survivor wrote the tree")
	}
}

// hostProcesses lists the command lines of the host's processes.
func hostProcesses(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && len(b) > 0 {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// TestSandboxUserSocketsUnreachable: a real tmux server of the user's,
// its socket under /tmp, cannot be driven from the sandbox (which would
// run a command unconfined); nor is anything under /run reachable.
func TestSandboxUserSocketsUnreachable(t *testing.T) {
	t.Parallel()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("no tmux")
	}
	root := hostTmp(t)
	sock := filepath.Join(root, "tmux-sock")
	server := exec.Command(tmux, "-S", sock, "-f", "/dev/null", "new-session", "-d", "sleep 600")
	server.Env = append(os.Environ(), "SHELL=/bin/sh") // nobody's login shell runs nothing
	if out, err := server.CombinedOutput(); err != nil {
		t.Skipf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", sock, "kill-server").Run() })
	clone := filepath.Join(root, "clone")
	if err := os.Mkdir(clone, 0o755); err != nil {
		t.Fatal(err)
	}
	pwned := filepath.Join(clone, "pwned")
	out, _ := sandboxed(t, &muster.Confinement{Writable: []string{clone}, Hide: []string{"/run"}}, clone,
		`tmux -S "$SOCK" new-window "touch $PWNED" 2>/dev/null && echo DROVE || echo no-tmux
		ls -A /run | wc -l | tr -d ' '`, "SOCK="+sock, "PWNED="+pwned)
	wantLines(t, out, "no-tmux", "0")
	if strings.Contains(out, "DROVE") {
		t.Errorf("the sandbox drove the user's tmux:\n%s", out)
	}
	// The server is alive and reachable from outside: the test is real.
	if out, err := exec.Command(tmux, "-S", sock, "list-sessions").CombinedOutput(); err != nil {
		t.Fatalf("tmux server gone: %v %s", err, out)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("a command ran through the user's tmux")
	}
}

// TestSandboxNetwork: a TCP service on the host's loopback is out of
// reach; the invocation's own loopback server works; and the bridge
// listener, bound inside, is served by muster from outside.
func TestSandboxNetwork(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go serveLine(host, "host-service")
	clone := hostTmp(t)
	const port = 47123
	var served sync.WaitGroup
	served.Add(1)
	bridge := &muster.Bridge{Port: port, Serve: func(l net.Listener) {
		if a := l.Addr().String(); a != fmt.Sprintf("127.0.0.1:%d", port) {
			t.Errorf("bridge listens on %s", a)
		}
		go func() { defer served.Done(); serveLine(l, "from-muster") }()
	}}
	client := `import socket,sys
s=socket.socket(); s.settimeout(5)
try:
    s.connect(("127.0.0.1", int(sys.argv[1]))); print(s.recv(64).decode().strip())
except OSError as e:
    print("refused")`
	own := `import socket,threading
l=socket.socket(); l.bind(("127.0.0.1",0)); l.listen(1)
def srv():
    c,_=l.accept(); c.sendall(b"own-server\n"); c.close()
threading.Thread(target=srv).start()
s=socket.socket(); s.connect(l.getsockname()); print(s.recv(64).decode().strip())`
	out, _ := sandboxed(t, (&muster.Confinement{Writable: []string{clone}}).WithBridge(bridge), clone,
		`"$PY" -c "$CLIENT" "$HOSTPORT"; "$PY" -c "$OWN"; "$PY" -c "$CLIENT" `+fmt.Sprint(port),
		"PY="+py, "CLIENT="+client, "OWN="+own, fmt.Sprintf("HOSTPORT=%d", host.Addr().(*net.TCPAddr).Port))
	wantLines(t, out, "refused", "own-server", "from-muster")
	if strings.Contains(out, "host-service") {
		t.Errorf("the host's loopback service was reached:\n%s", out)
	}
	served.Wait() // closed when the invocation ended
}

// serveLine answers every connection with line until l is closed.
func serveLine(l net.Listener, line string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		_, _ = io.WriteString(c, line+"\n")
		c.Close()
	}
}

// TestSandboxUnprivileged runs the sandbox tests again as an
// unprivileged user (nobody), as a developer's machine runs muster: the
// user namespace then maps that uid to itself.
func TestSandboxUnprivileged(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("already unprivileged")
	}
	needNamespaces(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv")
	}
	exe, _ := os.Executable()
	dir, err := os.MkdirTemp("/var/tmp", "muster-unpriv-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "confine.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
		bin, "-test.run", "^TestSandbox", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=/tmp", "LC_ALL=C", "TERM=xterm"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	for _, name := range []string{"TestSandboxPrivateTmpAndBindBack", "TestSandboxRootPowersGone", "TestSandboxSurvivorDies", "TestSandboxUserSocketsUnreachable", "TestSandboxNetwork", "TestSandboxForwardsSIGTERM", "TestSandboxKeyringNotShared", "TestSandboxUserKeyringNotShared", "TestSandboxOtherTerminalsUnreachable", "TestSandboxAbstractSocketsUnreachable", "TestSandboxInheritsNoStrayDescriptor", "TestSandboxReadOnlyBindStaysReadOnly"} {
		if !strings.Contains(string(out), "--- PASS: "+name) {
			t.Errorf("%s did not pass as nobody:\n%s", name, out)
		}
	}
}

// TestSandboxForwardsSIGTERM: SIGTERM sent to stage one alone (PID 1 of
// the namespace, which the kernel shields from signals it has no handler
// for) reaches the program's process group, whose trap runs: the
// documented SIGTERM-then-SIGKILL grace depends on it.
func TestSandboxForwardsSIGTERM(t *testing.T) {
	t.Parallel()
	exe := needNamespaces(t)
	clone := hostTmp(t)
	var leader int
	res, err := proc.Run(context.Background(), proc.Spec{
		Argv: []string{"sh", "-c", `trap 'echo term > "$PWD/term"; exit 7' TERM; echo ready; while :; do sleep 0.1; done`},
		Dir:  clone, Confine: &muster.Confinement{Launcher: exe, Namespaces: true, Writable: []string{clone}},
		Timeout: 30 * time.Second, Grace: 5 * time.Second,
		OnStart: func(pid int) { leader = pid },
		OnLine: func(l string) {
			if l == "ready" {
				_ = syscall.Kill(leader, syscall.SIGTERM)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "" || res.ExitCode != 7 {
		t.Errorf("result %+v, want the trap's exit 7", res)
	}
	if b, _ := os.ReadFile(filepath.Join(clone, "term")); string(b) != "term\n" {
		t.Errorf("the program's trap did not run: %q", b)
	}
}

// TestSandboxProgramConfinedByStageOne: stage one starts the program
// itself, from a thread it confined (no second start of muster): the
// program is stage one's child, runs with no_new_privs and inside
// a Landlock domain (a write to a host directory that no mount makes
// read-only is refused with EACCES, not EROFS), while stage one, PID 1,
// still reaps what the program leaves behind and ends it.
func TestSandboxProgramConfinedByStageOne(t *testing.T) {
	t.Parallel()
	clone := hostTmp(t)
	host, err := os.MkdirTemp("/var/tmp", "muster-ns-landlock-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(host) })
	out, code := sandboxed(t, &muster.Confinement{Writable: []string{clone}}, clone, `
		echo "ppid $PPID"
		grep '^NoNewPrivs:' /proc/self/status | tr -d ' \t'
		tr '\0' ' ' </proc/1/cmdline | grep -q -- '--ns' && echo stage-one-is-pid-1
		echo x > "$HOST/f" 2>&1 || true
		echo ok > "$PWD/made" && echo clone-writable
	`, "HOST="+host)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantLines(t, out, "ppid 1", "NoNewPrivs:1", "stage-one-is-pid-1", "clone-writable")
	if !strings.Contains(out, "Permission denied") {
		t.Errorf("the write outside the writable paths was not refused by Landlock:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(host, "f")); err == nil {
		t.Error("a write outside the writable paths reached the host")
	}
}
