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
