package pi

import (
	"slices"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

func spec() *muster.ExecutorSpec {
	return &muster.ExecutorSpec{Name: "pi", Kind: muster.ExecPi, Clones: 1, Model: "mock-model",
		BaseURL: "http://127.0.0.1:9/v1", APIKeyEnv: "MUSTER_PI_TEST_KEY"}
}

// TestWriteStream replays pi's stream of a write (recorded against the
// mock server): session, tool, messages, usage per assistant message; and
// checks the argv (authority as tools, the provider, no key) and the
// clone's config.
func TestWriteStream(t *testing.T) {
	t.Setenv("MUSTER_PI_TEST_KEY", "sk-pi-unit-secret-0123456789abcdef")
	req := clitest.Request(t, spec(), muster.RoleCoder, muster.AuthorityWrite, "make hello")
	res, err, rec, fake := clitest.Execute(t, New, req, "testdata/write.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.SessionID == "" || len(rec.Of(muster.RecSession)) != 1 {
		t.Errorf("session %q", res.SessionID)
	}
	if tools := rec.Of(muster.RecTool); len(tools) != 1 || tools[0].Tool != "write" || tools[0].Args != "hello.txt" {
		t.Errorf("tools %+v", tools)
	}
	if u := rec.Usage(); u.InputTokens != 2200 || u.OutputTokens != 70 {
		t.Errorf("usage %+v", u)
	}
	if us := rec.Of(muster.RecUsage); len(us) != 2 || us[0].Model != "mock-model" {
		t.Errorf("usage records %+v", us)
	}
	argv := fake.Argv(t)
	for _, want := range [][]string{{"--mode", "json"}, {"--tools", writeTools}, {"--provider", providerID}, {"--model", "mock-model"}} {
		if i := slices.Index(argv, want[0]); i < 0 || i+1 >= len(argv) || argv[i+1] != want[1] {
			t.Errorf("argv %q lacks %q", argv, want)
		}
	}
	if strings.Contains(strings.Join(argv, " "), "sk-pi-unit") {
		t.Error("key in argv")
	}
	env := fake.Env(t)
	if env["MUSTER_PI_TEST_KEY"] != "sk-pi-unit-secret-0123456789abcdef" || !strings.HasSuffix(env["PI_CODING_AGENT_DIR"], "/.pi/agent") {
		t.Errorf("env %v", env)
	}
	models := clitest.ReadFile(env["PI_CODING_AGENT_DIR"] + "/models.json")
	if !strings.Contains(models, `"apiKey": "MUSTER_PI_TEST_KEY"`) || strings.Contains(models, "sk-pi-unit") {
		t.Errorf("models.json %s", models)
	}
}

func TestAuthorityTools(t *testing.T) {
	for auth, want := range map[muster.Authority]string{muster.AuthorityRead: readTools, muster.AuthorityWrite: writeTools, muster.AuthorityShell: shellTools} {
		req := clitest.Request(t, spec(), muster.RoleCoder, auth, "x")
		args := buildArgs(spec(), req, "/s", false)
		if i := slices.Index(args, "--tools"); args[i+1] != want {
			t.Errorf("%s: tools %s", auth, args[i+1])
		}
	}
}

// TestAuthFailure: pi exits 0 after a failed model call; the message's
// stop reason "error" is the failure, classified from its text.
func TestAuthFailure(t *testing.T) {
	clitest.Fails(t, New, spec(), "testdata/auth.jsonl", muster.FailAuth)
	req := clitest.Request(t, spec(), muster.RoleCoder, muster.AuthorityWrite, "x")
	_, err, _, _ := clitest.Execute(t, New, req, "testdata/auth.jsonl", 0)
	clitest.WantClass(t, err, muster.FailAuth)
}
