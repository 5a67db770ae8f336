package gemini

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

const testKey = "gm-test-secret-4242"

func testSpec() *muster.ExecutorSpec {
	return &muster.ExecutorSpec{Name: "gem", Kind: muster.ExecGemini, Model: "gemini-2.5-flash",
		BaseURL: "http://127.0.0.1:9/", APIKeyEnv: "MUSTER_TEST_GEMINI_KEY"}
}

func TestBuildArgs(t *testing.T) {
	spec := &muster.ExecutorSpec{Model: "m"}
	for auth, mode := range map[muster.Authority]string{
		muster.AuthorityRead: "plan", muster.AuthorityWrite: "auto_edit", muster.AuthorityShell: "yolo",
	} {
		args := strings.Join(buildArgs(spec, &muster.ExecRequest{Authority: auth, SessionID: "abc", Scratch: "/s"}, true), " ")
		want := "--output-format stream-json --model m --approval-mode " + mode + " --include-directories /s --resume abc --prompt "
		if args != want {
			t.Errorf("%s: %q\nwant %q", auth, args, want)
		}
	}
}

func TestExecuteWrite(t *testing.T) {
	t.Setenv("MUSTER_TEST_GEMINI_KEY", testKey)
	req := clitest.Request(t, testSpec(), muster.RoleCoder, muster.AuthorityWrite, "make hello")
	res, err, rec, fake := clitest.Execute(t, New, req, "testdata/write.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.SessionID != "84a94f3a-16d1-4a4a-9c58-1dc8734bbfc2" {
		t.Errorf("session %q", res.SessionID)
	}
	if tools := rec.Of(muster.RecTool); len(tools) != 1 || tools[0].Tool != "write_file" {
		t.Errorf("tools %+v", tools)
	}
	u := rec.Of(muster.RecUsage)
	if len(u) != 1 || u[0].Model != "gemini-2.5-flash" || u[0].Usage != (muster.Usage{InputTokens: 2200, OutputTokens: 70}) {
		t.Errorf("usage %+v", u)
	}
	env := fake.Env(t)
	if env["GEMINI_API_KEY"] != testKey || env["GOOGLE_GEMINI_BASE_URL"] != "http://127.0.0.1:9" || env["GEMINI_CLI_TRUST_WORKSPACE"] != "true" {
		t.Errorf("env %v", env)
	}
	for _, a := range fake.Argv(t) {
		if strings.Contains(a, testKey) {
			t.Fatal("key in argv")
		}
	}
	if fake.Stdin(t) != "make hello" {
		t.Errorf("stdin %q", fake.Stdin(t))
	}
	b, err := os.ReadFile(filepath.Join(env["HOME"], ".gemini", "settings.json"))
	if err != nil || !strings.Contains(string(b), "gemini-api-key") || strings.Contains(string(b), testKey) {
		t.Errorf("settings %v %s", err, b)
	}
}

func TestExecuteReviewerDeltas(t *testing.T) {
	req := clitest.Request(t, testSpec(), muster.RoleReviewer, muster.AuthorityRead, "review")
	res, err, rec, _ := clitest.Execute(t, New, req, "testdata/review-resume.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Reviewed || len(res.Findings) != 1 || res.Findings[0].Title != "missing test" {
		t.Errorf("findings %+v", res.Findings)
	}
	if m := rec.Of(muster.RecMessage); len(m) != 1 {
		t.Errorf("deltas not joined into one message: %d", len(m))
	}
}

func TestExecuteFailures(t *testing.T) {
	for fixture, class := range map[string]muster.FailureClass{
		"ratelimit": muster.FailRateLimit, "usagelimit": muster.FailUsageLimit, "auth": muster.FailAuth, "server": muster.FailTransient,
	} {
		t.Run(fixture, func(t *testing.T) {
			clitest.Fails(t, New, testSpec(), "testdata/"+fixture+".jsonl", class)
		})
	}
}

func TestResumable(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	proj := filepath.Join(home, ".gemini", "tmp", "some-slug")
	if err := os.MkdirAll(filepath.Join(proj, "chats"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{".project_root": dir + "\n", "chats/session-2026-11-29T12-02-84a94f3a.jsonl": ""} {
		if err := os.WriteFile(filepath.Join(proj, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	id := "84a94f3a-16d1-4a4a-9c58-1dc8734bbfc2"
	if !resumable(home, dir, id) {
		t.Error("session of this project not resumable")
	}
	if resumable(home, t.TempDir(), id) || resumable(home, dir, "ffffffff-0000") {
		t.Error("resumable from another project or with another id")
	}
}
