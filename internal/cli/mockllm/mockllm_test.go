package mockllm

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunServesScript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(script, []byte("scenarios:\n  - name: default\n    steps:\n      - text: hi there\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, &Options{Addr: "127.0.0.1:0", Script: script}, pw) }()
	url, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(strings.TrimSpace(url)+"/v1/messages", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "hi there") {
		t.Fatalf("reply %s", b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestNewCmdRejectsBadScript(t *testing.T) {
	t.Parallel()
	cmd := NewCmd()
	cmd.SetArgs([]string{"--script", filepath.Join(t.TempDir(), "missing.yaml")})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err == nil {
		t.Fatal("missing script accepted")
	}
}
