package tui

import (
	"bytes"
	"context"
	"errors"
	"github.com/muster-run/muster/internal/golden"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/textsafe"
	"github.com/muster-run/muster/internal/viewtest"
)

// t0 is the sample journal's start.
var t0 = viewtest.T0

// loadSample reads testdata/sample.jsonl: 8 tasks on 4 clones, a fix
// round after review, and a task that fails after two fix rounds.
func loadSample(t testing.TB) []muster.Event {
	return viewtest.Load(t, filepath.Join("testdata", "sample.jsonl"))
}

// until returns the events recorded at or before t0+d.
func until(evs []muster.Event, d time.Duration) []muster.Event {
	for i, e := range evs {
		if e.Time.After(t0.Add(d)) {
			return evs[:i]
		}
	}
	return evs
}

func fixed(d time.Duration) func() time.Time { return func() time.Time { return t0.Add(d) } }

// feed sends events and messages through Update, as the program would.
func feed(m Model, msgs ...tea.Msg) Model {
	for _, msg := range msgs {
		nm, _ := m.Update(msg)
		m = nm.(Model)
	}
	return m
}

func evMsgs(evs []muster.Event) []tea.Msg {
	msgs := make([]tea.Msg, len(evs))
	for i, e := range evs {
		msgs[i] = EventMsg{e}
	}
	return msgs
}

func key(s string) tea.Msg {
	switch s {
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	return tea.KeyPressMsg{Code: rune(s[0]), Text: s}
}

// frame returns the view's text without colour.
func frame(m Model) string { return ansi.Strip(m.View().Content) }

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name+".golden"), []byte(got))
}

func checkFits(t *testing.T, f string, w, h int) {
	t.Helper()
	lines := strings.Split(f, "\n")
	if len(lines) > h {
		t.Errorf("%dx%d: frame has %d lines", w, h, len(lines))
	}
	for i, l := range lines {
		if lw := lipgloss.Width(l); lw > w {
			t.Errorf("%dx%d: line %d is %d cells wide: %q", w, h, i+1, lw, l)
		}
	}
}

func TestViewEmpty(t *testing.T) {
	m := New(Options{Now: fixed(0), Width: 80, Height: 24})
	checkGolden(t, "empty", frame(m))
}

func TestViewMidRun(t *testing.T) {
	evs := loadSample(t)
	at := 5*time.Minute + 40*time.Second
	m := New(Options{Now: fixed(at), Width: 120, Height: 36})
	m = feed(m, evMsgs(until(evs, at))...)
	f := frame(m)
	checkGolden(t, "midrun", f)
	checkFits(t, f, 120, 36)
	for _, want := range []string{"[3/8]", "running 2", "claude#1", "claude#2", "codex#1", "gemini#1", "$20.00"} {
		if !strings.Contains(f, want) {
			t.Errorf("frame lacks %q", want)
		}
	}
}

func TestViewFinishedSelectFailed(t *testing.T) {
	evs := loadSample(t)
	m := New(Options{Now: fixed(time.Hour), Width: 100, Height: 30})
	m = feed(m, evMsgs(evs)...)
	// e2e is the last task: down past the end stays on it.
	for range 10 {
		m = feed(m, key("j"))
	}
	if got := m.Selected(); got != "e2e" {
		t.Fatalf("selected %q, want e2e", got)
	}
	f := frame(m)
	checkGolden(t, "finished", f)
	checkFits(t, f, 100, 30)
	for _, want := range []string{"[7/8]", "failed 1", "run failed", "stalemate", "could not find why", "gates build ✓ test ✗"} {
		if !strings.Contains(f, want) {
			t.Errorf("frame lacks %q", want)
		}
	}
	m = feed(m, key("up"), key("k"))
	if got := m.Selected(); got != "cli" { // order: ... metrics, cli, docs, e2e
		t.Errorf("after up,k selected %q, want cli", got)
	}
}

func TestViewSelectShowsOutputAndCommit(t *testing.T) {
	evs := loadSample(t)
	m := New(Options{Now: fixed(time.Hour), Width: 140, Height: 40})
	m = feed(m, evMsgs(evs)...)
	m = feed(m, key("down")) // api
	f := frame(m)
	for _, want := range []string{"api: Add the /healthz handler", "internal/http/health.go, internal/http/health_test.go", "HEAD now returns 200"} {
		if !strings.Contains(f, want) {
			t.Errorf("frame lacks %q:\n%s", want, f)
		}
	}
	// The message carried colour codes: none of them reach the screen.
	if strings.Contains(m.View().Content, "\x1b[31mAll") {
		t.Error("an agent's escape sequence reached the frame")
	}
}

func TestViewResize(t *testing.T) {
	evs := loadSample(t)
	m := New(Options{Now: fixed(5 * time.Minute), Width: 120, Height: 40})
	m = feed(m, evMsgs(until(evs, 5*time.Minute))...)
	for _, sz := range [][2]int{{160, 48}, {80, 24}, {60, 16}, {40, 10}, {20, 5}, {200, 12}} {
		m = feed(m, tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		checkFits(t, frame(m), sz[0], sz[1])
	}
	m = feed(m, tea.WindowSizeMsg{Width: 60, Height: 16})
	checkGolden(t, "small", frame(m))
}

func TestUntrustedTextIsSanitized(t *testing.T) {
	evil := "pwn\x1b]0;owned\x07ed \x1b[2J\x9b31m\u202eoops\r\nnext"
	m := New(Options{Now: fixed(0), Width: 120, Height: 30})
	m = feed(m,
		EventMsg{muster.Event{Type: muster.EvRunStarted, Time: t0, Run: "r1"}},
		EventMsg{muster.Event{Type: muster.EvTasksPlanned, Time: t0, Tasks: []*muster.Task{{ID: "x", Title: evil}}}},
		EventMsg{muster.Event{Type: muster.EvTaskStarted, Time: t0, Task: "x", Attempt: 1, Executor: "sim", Clone: 1}},
		EventMsg{muster.Event{Type: muster.EvMessage, Time: t0, Task: "x", Message: evil}},
		EventMsg{muster.Event{Type: muster.EvWarning, Time: t0, Message: evil}},
	)
	raw := m.View().Content
	for _, bad := range []string{"owned", "\x1b[2J", "\x9b", "\u202e", "\x07", "\r"} {
		if strings.Contains(raw, bad) {
			t.Errorf("frame contains %q", bad)
		}
	}
	if !strings.Contains(ansi.Strip(raw), "pwned oops next") {
		t.Errorf("sanitized text missing:\n%s", ansi.Strip(raw))
	}
}

func TestKeys(t *testing.T) {
	m := New(Options{Now: fixed(0)})
	nm, cmd := m.Update(key("q"))
	if !nm.(Model).Detached() || cmd == nil {
		t.Error("q does not leave the view")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("q does not quit the program")
	}
	nm, cmd = m.Update(key("ctrl+c"))
	if !nm.(Model).Interrupted() || cmd == nil || nm.(Model).Detached() {
		t.Error("ctrl+c does not interrupt")
	}
}

func TestPrinter(t *testing.T) {
	var b bytes.Buffer
	p := NewPrinter(&b)
	for _, e := range loadSample(t) {
		if err := p.Print(e); err != nil {
			t.Fatal(err)
		}
	}
	checkGolden(t, "plain", b.String())
	if strings.Contains(b.String(), "\x1b") {
		t.Error("plain output has an escape sequence")
	}
}

func TestRunEndsWhenStreamCloses(t *testing.T) {
	evs := loadSample(t)
	ch := make(chan muster.Event, len(evs))
	for _, e := range evs {
		ch <- e
	}
	close(ch)
	pr, pw := io.Pipe()
	defer pw.Close()
	var out bytes.Buffer
	err := Run(context.Background(), ch, pr, &out, Options{Now: fixed(time.Hour), Width: 100, Height: 30})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(out.String(), "[7/8]") || !strings.Contains(out.String(), "e2e     failed") {
		t.Errorf("summary missing:\n%s", out.String())
	}
}

func TestRunDetachAndInterrupt(t *testing.T) {
	for _, tc := range []struct {
		keys string
		want error
	}{{"q", ErrDetached}, {"\x03", ErrInterrupt}} {
		ch := make(chan muster.Event) // never closes: only a key ends the view
		var out bytes.Buffer
		err := Run(context.Background(), ch, strings.NewReader(tc.keys), &out, Options{Now: fixed(0), Width: 80, Height: 24})
		if !errors.Is(err, tc.want) {
			t.Errorf("keys %q: got %v, want %v", tc.keys, err, tc.want)
		}
		// q says, in one line, that the run goes on and how to watch
		// or stop it (issue 25); ctrl+c says nothing of the kind.
		if said := strings.Contains(out.String(), DetachedLine); said != errors.Is(tc.want, ErrDetached) {
			t.Errorf("keys %q: the detached line said %v:\n%s", tc.keys, said, out.String())
		}
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                         "plain",
		"a\x1b[31mred\x1b[0m":           "ared",
		"t\x1b]8;;http://x\x1b\\link":   "tlink",
		"bell\x1b]0;title\x07after":     "bellafter",
		"tab\there\nline":               "tab here line",
		"\x00nul\x7f":                   "nul",
		"bad\xffutf8":                   "badutf8",
		"csi8\u009b2Jx":                 "csi8x",
		"rtl\u202eevil\u2066":           "rtlevil",
		"esc at end\x1b":                "esc at end",
		"dcs\x1bPq#0;2;0;0;0\x1b\\done": "dcsdone",
	} {
		if got := textsafe.Sanitize(in); got != want {
			t.Errorf("textsafe.Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkFoldAndRender folds the sample run (170 events) and draws a
// 160x48 frame after each event, as the program does.
func BenchmarkFoldAndRender(b *testing.B) {
	evs := loadSample(b)
	for b.Loop() {
		m := New(Options{Now: fixed(time.Minute), Width: 160, Height: 48})
		for _, e := range evs {
			m = feed(m, EventMsg{e})
			_ = m.View()
		}
	}
	b.ReportMetric(float64(len(evs)), "frames/op")
}

func TestLiveSendAndClose(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	var out bytes.Buffer
	l := Start(context.Background(), pr, &out, Options{Now: fixed(time.Hour), Width: 100, Height: 30})
	for _, e := range loadSample(t) {
		l.Send(e)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if l.Active() {
		t.Error("still active after Close")
	}
	l.Send(muster.Event{Type: muster.EvWarning}) // dropped, no panic
	if !strings.Contains(out.String(), "[7/8]") {
		t.Errorf("the view did not get every event:\n%s", out.String())
	}
}

func TestLiveInterruptCallsBack(t *testing.T) {
	stopped := make(chan struct{})
	var out bytes.Buffer
	l := Start(context.Background(), strings.NewReader("\x03"), &out, Options{Now: fixed(0), Width: 80, Height: 24,
		OnInterrupt: func() { close(stopped) }})
	<-l.Done()
	<-stopped
	if err := l.Close(); !errors.Is(err, ErrInterrupt) {
		t.Errorf("Close: %v, want ErrInterrupt", err)
	}
}

// The footer tells what ctrl+c does: in muster run it stops the run; in
// muster watch it only leaves the view, as watch's help says.
func TestFooterSaysWhatCtrlCDoes(t *testing.T) {
	watch := frame(New(Options{Now: fixed(0), Width: 100, Height: 24}))
	if !strings.Contains(watch, "q or ctrl+c leave view (the run goes on)") || strings.Contains(watch, "stop run") {
		t.Errorf("watch's footer:\n%s", watch)
	}
	run := frame(New(Options{Now: fixed(0), Width: 100, Height: 24, OnInterrupt: func() {}}))
	if !strings.Contains(run, "ctrl+c stop run") {
		t.Errorf("run's footer:\n%s", run)
	}
}

// TestLanesShowThePace: after a rate limit the idle lanes of the
// credential say so, with the time left; once the backoff (10 s, and up
// to half as much jitter) is over and
// the limit holds the crew back, they say "paced".
func TestLanesShowThePace(t *testing.T) {
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{{Name: "api", Kind: muster.ExecOpenAI, Clones: 4, APIKeyEnv: "K"}}}
	until := t0.Add(10 * time.Second)
	evs := []muster.Event{
		{Type: muster.EvRunStarted, Time: t0, Run: "r", Config: cfg},
		{Type: muster.EvTasksPlanned, Time: t0, Tasks: []*muster.Task{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}, {ID: "e"}}},
	}
	for i, id := range []muster.TaskID{"a", "b", "c", "d"} {
		evs = append(evs, muster.Event{Type: muster.EvExecutorLeased, Time: t0, Task: id, Executor: "api", Clone: i + 1, Role: "coder"},
			muster.Event{Type: muster.EvTaskStarted, Time: t0, Task: id, Attempt: 1, Executor: "api", Clone: i + 1})
	}
	evs = append(evs,
		muster.Event{Seq: 20, Type: muster.EvRateLimited, Time: t0, Task: "a", Attempt: 1, Executor: "api", Clone: 1, Until: &until},
		muster.Event{Type: muster.EvTaskFailed, Time: t0, Task: "a", Attempt: 1, Retry: true, Reason: "rate limited (not charged)"},
		muster.Event{Type: muster.EvExecutorRelease, Time: t0, Task: "a", Executor: "api", Clone: 1},
	)
	m := feed(New(Options{Now: fixed(3 * time.Second), Width: 120, Height: 30}), evMsgs(evs)...)
	if f := frame(m); !strings.Contains(f, "rate limited") || !strings.Contains(f, "retry in") {
		t.Errorf("lanes during the backoff:\n%s", f)
	}
	m = feed(New(Options{Now: fixed(20 * time.Second), Width: 120, Height: 30}), evMsgs(evs)...)
	if f := frame(m); !strings.Contains(f, "paced") || !strings.Contains(f, "2 at once") {
		t.Errorf("lanes after the backoff:\n%s", f)
	}
}

// The header's clock counts the time a muster ran the run: after a
// resume it goes on from where the stopped process left it, not from
// the wall clock (issue 25: it counted the hour muster was not running).
func TestElapsedLeavesOutTimeNotRunning(t *testing.T) {
	m := New(Options{Now: fixed(time.Hour + 5*time.Second), Width: 120, Height: 30})
	m = feed(m,
		EventMsg{muster.Event{Type: muster.EvRunStarted, Run: "r", Time: t0}},
		EventMsg{muster.Event{Type: muster.EvRunInterrupted, Time: t0.Add(10 * time.Second)}},
		EventMsg{muster.Event{Type: muster.EvRunResumed, Time: t0.Add(time.Hour)}},
	)
	if got := m.elapsed(); got != 15*time.Second {
		t.Errorf("elapsed %v, want 15s (10s before the stop, 5s since the resume)", got)
	}
	if v := frame(m); !strings.Contains(v, "elapsed 15s") {
		t.Errorf("header: %v", v)
	}
}
