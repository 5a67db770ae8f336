package htmlreport

import (
	"context"
	"encoding/json"
	"html"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

// chromium returns the path of a Chromium binary, skipping the test when
// there is none (and failing it in CI, where .ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "headless Chromium not found: apt-get install -y chromium"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI must have it)")
	}
	t.Skip(msg)
	return ""
}

// headless runs Chromium on a page with a fresh profile and returns its
// standard output.
func headless(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1400,2400"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

// measureScript records the rendered size of each drawing in a body
// attribute, which --dump-dom then prints.
const measureScript = `<script>
const out = {};
for (const id of ["graph-svg", "gantt-svg", "cost-clone-svg", "cost-model-svg", "cost-time-svg"]) {
  const el = document.getElementById(id);
  if (!el) { continue; }
  const r = el.getBoundingClientRect();
  out[id] = {w: r.width, h: r.height, shapes: el.querySelectorAll("rect, path, polyline, polygon").length};
}
out.bars = Array.from(document.querySelectorAll("#gantt-svg rect.bar")).filter(r => r.getBoundingClientRect().width > 0).length;
out.nodes = Array.from(document.querySelectorAll("#graph-svg rect.node")).filter(r => r.getBoundingClientRect().height > 0).length;
// Every edge, sampled along its rendered path, against every box it does
// not connect: a point inside one draws a dependency the plan lacks.
const boxes = Array.from(document.querySelectorAll("#graph-svg g.task-node")).map(g => {
  const r = g.querySelector("rect");
  return {id: g.querySelector("title").textContent.split(":")[0], x: +r.getAttribute("x"), y: +r.getAttribute("y"),
          w: +r.getAttribute("width"), h: +r.getAttribute("height")};
});
const crossings = new Set();
out.edges = 0;
for (const p of document.querySelectorAll("#graph-svg path.edge")) {
  out.edges++;
  const [from, to] = p.querySelector("title").textContent.split(" → ");
  const len = p.getTotalLength();
  for (let s = 0; s <= len; s += 1) {
    const pt = p.getPointAtLength(s);
    for (const b of boxes) {
      if (b.id !== from && b.id !== to && pt.x > b.x && pt.x < b.x + b.w && pt.y > b.y && pt.y < b.y + b.h) {
        crossings.add(from + " → " + to + " crosses " + b.id);
      }
    }
  }
}
out.crossings = Array.from(crossings);
document.body.setAttribute("data-measure", JSON.stringify(out));
</script>
</body>`

var cspMeta = regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>`)

type box struct {
	W, H   float64
	Shapes int
}

func TestChromiumRendersReport(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	page := render(t, loadSample(t), Options{Verification: "verified: journal, receipt and branch agree", Now: t0})
	report := filepath.Join(dir, "report.html")
	if err := os.WriteFile(report, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}

	// The page itself forbids scripts: a script added to it does not run.
	blocked := filepath.Join(dir, "blocked.html")
	if err := os.WriteFile(blocked, []byte(strings.Replace(page, "</body>", measureScript, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if dom := headless(t, bin, "--dump-dom", "file://"+blocked); strings.Contains(dom, `data-measure="`) {
		t.Error("a script ran in the report despite its Content-Security-Policy")
	}

	// A test copy without the policy measures the drawings.
	measure := filepath.Join(dir, "measure.html")
	probe := strings.Replace(cspMeta.ReplaceAllString(page, ""), "</body>", measureScript, 1)
	if err := os.WriteFile(measure, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := headless(t, bin, "--dump-dom", "file://"+measure)
	m := regexp.MustCompile(`data-measure="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no measurements in the dumped DOM:\n%.2000s", dom)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &got); err != nil {
		t.Fatalf("measurements %q: %v", m[1], err)
	}
	for _, id := range []string{"graph-svg", "gantt-svg", "cost-clone-svg", "cost-model-svg", "cost-time-svg"} {
		var b box
		if err := json.Unmarshal(got[id], &b); err != nil || b.W < 100 || b.H < 40 || b.Shapes == 0 {
			t.Errorf("%s rendered as %+v (%v): want a visible drawing", id, b, err)
		} else {
			t.Logf("%s: %.0fx%.0f px, %d shapes", id, b.W, b.H, b.Shapes)
		}
	}
	var bars, nodes int
	_ = json.Unmarshal(got["bars"], &bars)
	_ = json.Unmarshal(got["nodes"], &nodes)
	if bars != 16 || nodes != 8 {
		t.Errorf("visible Gantt bars %d (want 16), graph nodes %d (want 8)", bars, nodes)
	}
	// No edge of the task graph crosses a box it does not connect.
	var edges int
	var crossings []string
	_ = json.Unmarshal(got["edges"], &edges)
	if err := json.Unmarshal(got["crossings"], &crossings); err != nil || edges != 10 {
		t.Errorf("edges %d (want 10), crossings %s: %v", edges, got["crossings"], err)
	}
	for _, c := range crossings {
		t.Errorf("task graph: the edge %s", c)
	}

	// A screenshot of the page as a person sees it.
	shot := filepath.Join(dir, "report.png")
	headless(t, bin, "--screenshot="+shot, "file://"+report)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// The page is not blank: count pixels that differ from the corner.
	bg := img.At(0, 0)
	differ := 0
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y += 4 {
		for x := bnd.Min.X; x < bnd.Max.X; x += 4 {
			if img.At(x, y) != bg {
				differ++
			}
		}
	}
	if differ < 1000 {
		t.Errorf("screenshot looks blank (%d sampled pixels differ from the background)", differ)
	}
	t.Logf("screenshot %s (%dx%d); keep it with VIEWS_SHOT=FILE", shot, bnd.Dx(), bnd.Dy())
	if keep := os.Getenv("VIEWS_SHOT"); keep != "" {
		data, _ := os.ReadFile(shot)
		_ = os.WriteFile(keep, data, 0o644)
	}
}

// TestChromiumGraphEdgesMissBoxes measures, in the browser, the task graph
// of a plan whose edges skip columns: sampled along each rendered path, no
// edge enters a box it does not connect.
func TestChromiumGraphEdgesMissBoxes(t *testing.T) {
	bin := chromium(t)
	tasks := []*muster.Task{{ID: "a"}, {ID: "x"}, {ID: "b", After: []muster.TaskID{"a"}}, {ID: "y", After: []muster.TaskID{"x"}},
		{ID: "z", After: []muster.TaskID{"x"}}, {ID: "c", After: []muster.TaskID{"b", "y"}}, {ID: "d", After: []muster.TaskID{"a", "c", "z"}},
		{ID: "e", After: []muster.TaskID{"x", "d"}}}
	page := render(t, []muster.Event{{Time: t0, Type: muster.EvRunStarted, Run: "g"}, {Time: t0, Type: muster.EvTasksPlanned, Tasks: tasks}}, Options{})
	measure := filepath.Join(t.TempDir(), "measure.html")
	probe := strings.Replace(cspMeta.ReplaceAllString(page, ""), "</body>", measureScript, 1)
	if err := os.WriteFile(measure, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := headless(t, bin, "--dump-dom", "file://"+measure)
	m := regexp.MustCompile(`data-measure="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no measurements in the dumped DOM:\n%.2000s", dom)
	}
	var got struct {
		Edges     int      `json:"edges"`
		Crossings []string `json:"crossings"`
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &got); err != nil {
		t.Fatalf("measurements %q: %v", m[1], err)
	}
	if got.Edges != 10 {
		t.Errorf("%d edges drawn, want 10", got.Edges)
	}
	for _, c := range got.Crossings {
		t.Errorf("task graph: the edge %s", c)
	}
}
