package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/schedops/scheduler-profile-operator/internal/simulate"
	"github.com/schedops/scheduler-profile-operator/internal/testutil/chromium"
)

var htmlOut = flag.String("html-out", "", "keep the page and the screenshot of TestSimulateHTMLInChromium in this directory")

// The viewport the page is rendered in, and so the screenshot's size.
const viewportWidth, viewportHeight = 1280, 1024

// htmlCell is what the page's DOM says of one node's cell, as htmlGridsJS returns it.
type htmlCell struct {
	Name, Zone, Background, Color string
	X, Y, Width, Height           float64
	Pods                          []struct {
		Name, Marker, Color, Background string
		Moved                           bool
	}
}

type htmlGrid struct {
	Profile string
	Cells   []htmlCell
}

// htmlGridsJS reads the grids from the rendered page: per profile its node cells with the zone
// heading above them, the colour the browser computed for their background, where they are,
// and their pods with the marker drawn after each (the ⇄ of a moved pod).
const htmlGridsJS = `[...document.querySelectorAll("section.run")].map(run => ({
	Profile: run.querySelector("h2").textContent,
	Cells: [...run.querySelectorAll(".node")].map(cell => {
		const r = cell.getBoundingClientRect();
		return {
			Name: cell.querySelector("b").textContent,
			Zone: cell.closest(".zone").querySelector("h3").textContent,
			Background: getComputedStyle(cell).backgroundColor,
			Color: getComputedStyle(cell).color,
			X: r.left, Y: r.top, Width: r.width, Height: r.height,
			Pods: [...cell.querySelectorAll(".pod")].map(p => ({
				Name: p.textContent,
				Moved: p.classList.contains("moved"),
				Marker: getComputedStyle(p, "::after").content,
				Color: getComputedStyle(p).color,
				Background: getComputedStyle(p).backgroundColor,
			})),
		};
	}),
}))`

// TestSimulateHTMLInChromium loads the page of `manager simulate -o html` for a comparison of
// the spread and binpack samples, on the example cluster with a third zone added, in headless
// Chromium, and checks what a reader sees: the page loaded with no console error, exception or
// failed load and no request but the file's own; one cell per node of the snapshot in each
// grid, under its zone; the moved pods, and only they, marked ⇄; and the screenshot, a PNG of
// the viewport's size, showing each cell in its shade, darker with more CPU requested. It skips
// when Chromium is not installed (make chromium); make test-html installs it and runs this.
func TestSimulateHTMLInChromium(t *testing.T) {
	atRoot(t)
	browser := chromium.Start(t, viewportWidth, viewportHeight)
	dir := *htmlOut
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cluster, workload := htmlFixture(t)
	args := []string{"-f", sample + "spread.yaml", "--compare", sample + "binpack.yaml", "--cluster", cluster, "--workload", workload}
	var report simulate.Report
	if err := json.Unmarshal(simulateOutput(t, append(args, "-o", "json")), &report); err != nil {
		t.Fatal(err)
	}
	if placed := report.Runs[0].Summary.Bound; len(report.Moved) == 0 || len(report.Moved) >= placed {
		t.Fatalf("%d of the %d pods spread places move to binpack: want some to move and some not, or the marks go unchecked", len(report.Moved), placed)
	}
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, simulateOutput(t, append(args, "-o", "html")), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pageURL := "file://" + page
	if err := browser.Load(ctx, pageURL); err != nil {
		t.Fatal(err)
	}
	var grids []htmlGrid
	if err := browser.Eval(ctx, htmlGridsJS, &grids); err != nil {
		t.Fatal(err)
	}
	shot, err := browser.Screenshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	screenshot := filepath.Join(dir, "report.png")
	if err := os.WriteFile(screenshot, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if *htmlOut != "" {
		t.Logf("Kept the page %s and its screenshot %s", page, screenshot)
	}

	for _, p := range browser.Problems() {
		t.Errorf("loading the page: %s", p)
	}
	if want := []string{pageURL}; !slices.Equal(browser.Requests(), want) {
		t.Errorf("the page requested %q, want only itself %q", browser.Requests(), want)
	}
	checkGrids(t, grids, report, snapshotNodes(t, cluster))
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	checkShading(t, img, grids, report)
	checkContrast(t, grids)
}

// checkGrids wants a grid per profile, in the report's order, with one cell per node of the
// snapshot under the heading of the node's zone, and each run's pods on their nodes, those that
// move marked ⇄ and the others not.
func checkGrids(t *testing.T, grids []htmlGrid, report simulate.Report, nodes map[string]string) {
	t.Helper()
	if len(grids) != len(report.Runs) {
		t.Fatalf("%d grids on the page, want one per profile (%d)", len(grids), len(report.Runs))
	}
	moved := map[string]bool{}
	for _, m := range report.Moved {
		moved[m.Pod] = true
	}
	for i, g := range grids {
		run := report.Runs[i]
		if g.Profile != run.Profile {
			t.Errorf("grid %d is of %q, want %q", i, g.Profile, run.Profile)
		}
		if len(g.Cells) != len(nodes) {
			t.Errorf("%s: %d node cells, want one per node of the snapshot (%d)", g.Profile, len(g.Cells), len(nodes))
		}
		cells := map[string]string{}
		wantPods := map[string]string{}
		for _, p := range run.Pods {
			if p.Node != "" {
				wantPods[p.Pod] = p.Node
			}
		}
		gotPods := map[string]string{}
		for _, c := range g.Cells {
			cells[c.Name] = zoneHeading(c.Zone)
			for _, p := range c.Pods {
				gotPods[p.Name] = c.Name
				if p.Moved != moved[p.Name] || (p.Marker == `" ⇄"`) != moved[p.Name] {
					t.Errorf("%s: pod %s on %s has class moved %t and marker %s; it moves: %t", g.Profile, p.Name, c.Name, p.Moved, p.Marker, moved[p.Name])
				}
			}
		}
		if diff := cmp.Diff(nodes, cells); diff != "" {
			t.Errorf("%s: the cells' nodes and zones differ from the snapshot's (-want +got):\n%s", g.Profile, diff)
		}
		if diff := cmp.Diff(wantPods, gotPods); diff != "" {
			t.Errorf("%s: the pods in the cells differ from the report's placements (-want +got):\n%s", g.Profile, diff)
		}
	}
}

// checkShading wants a screenshot of the viewport's size in which every cell lies and shows the
// background the browser computed for it (sampled in its bottom padding, below the text), the
// shade not white, and darker on a node with more CPU requested.
func checkShading(t *testing.T, img image.Image, grids []htmlGrid, report simulate.Report) {
	t.Helper()
	if got := img.Bounds().Size(); got != image.Pt(viewportWidth, viewportHeight) {
		t.Errorf("the screenshot is %v, want the viewport's %dx%d", got, viewportWidth, viewportHeight)
	}
	for i, g := range grids {
		cpu := map[string]float64{}
		for _, n := range report.Runs[i].Nodes {
			cpu[n.Name] = n.CPU
		}
		for _, c := range g.Cells {
			x, y := int(c.X+c.Width/2), int(c.Y+c.Height)-3
			if !image.Pt(x, y).In(img.Bounds()) {
				t.Errorf("%s: the cell of %s (%v) is outside the screenshot", g.Profile, c.Name, c)
				continue
			}
			var want color.RGBA
			if _, err := fmt.Sscanf(c.Background, "rgb(%d, %d, %d)", &want.R, &want.G, &want.B); err != nil {
				t.Errorf("%s: the cell of %s has background %q, want an opaque rgb(...) colour", g.Profile, c.Name, c.Background)
				continue
			}
			got := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			if !near(got, want) {
				t.Errorf("%s: the cell of %s shows rgb(%d, %d, %d) at (%d,%d), want its background %s", g.Profile, c.Name, got.R, got.G, got.B, x, y, c.Background)
			}
			if near(got, color.RGBA{255, 255, 255, 255}) {
				t.Errorf("%s: the cell of %s is white: no shade", g.Profile, c.Name)
			}
		}
		byCPU := slices.Clone(g.Cells)
		sort.SliceStable(byCPU, func(i, j int) bool { return cpu[byCPU[i].Name] < cpu[byCPU[j].Name] })
		for i := 1; i < len(byCPU); i++ {
			a, b := byCPU[i-1], byCPU[i]
			if cpu[a.Name] == cpu[b.Name] && a.Background != b.Background || cpu[a.Name] < cpu[b.Name] && lightness(b.Background) >= lightness(a.Background) {
				t.Errorf("%s: %s (%.1f%% cpu) has background %s, %s (%.1f%% cpu) %s: want the same shade for the same CPU, darker for more", g.Profile, a.Name, cpu[a.Name], a.Background, b.Name, cpu[b.Name], b.Background)
			}
		}
	}
}

// checkContrast wants every text of the cells, the node's and each pod's, readable on what is
// behind it: a contrast ratio of at least 4.5 (WCAG AA for normal text). A pod's label without a
// background of its own shows the cell's.
func checkContrast(t *testing.T, grids []htmlGrid) {
	t.Helper()
	for _, g := range grids {
		for _, c := range g.Cells {
			if r := contrast(c.Color, c.Background); r < 4.5 {
				t.Errorf("%s: the text of the cell of %s (%s on %s) has a contrast of %.2f, want at least 4.5", g.Profile, c.Name, c.Color, c.Background, r)
			}
			for _, p := range c.Pods {
				behind := p.Background
				if strings.HasSuffix(behind, ", 0)") { // transparent
					behind = c.Background
				}
				if r := contrast(p.Color, behind); r < 4.5 {
					t.Errorf("%s: pod %s on %s (%s on %s) has a contrast of %.2f, want at least 4.5", g.Profile, p.Name, c.Name, p.Color, behind, r)
				}
			}
		}
	}
}

// contrast is the WCAG contrast ratio of two computed "rgb(r, g, b)" colours.
func contrast(a, b string) float64 {
	luminance := func(css string) float64 {
		var rgb [3]float64
		_, _ = fmt.Sscanf(strings.Replace(css, "rgba", "rgb", 1), "rgb(%f, %f, %f", &rgb[0], &rgb[1], &rgb[2])
		for i, c := range rgb {
			if c /= 255; c <= 0.03928 {
				rgb[i] = c / 12.92
			} else {
				rgb[i] = math.Pow((c+0.055)/1.055, 2.4)
			}
		}
		return 0.2126*rgb[0] + 0.7152*rgb[1] + 0.0722*rgb[2]
	}
	la, lb := luminance(a), luminance(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

// near tells whether two colours differ by at most 2 in each channel (rounding of the colour
// conversions), ignoring alpha.
func near(a, b color.RGBA) bool {
	d := func(x, y uint8) bool { return int(x)-int(y) <= 2 && int(y)-int(x) <= 2 }
	return d(a.R, b.R) && d(a.G, b.G) && d(a.B, b.B)
}

// lightness is the sum of a computed "rgb(r, g, b)" colour's channels.
func lightness(css string) int {
	var r, g, b int
	_, _ = fmt.Sscanf(css, "rgb(%d, %d, %d)", &r, &g, &b)
	return r + g + b
}

// zoneHeading is how the page heads a zone: "(no zone)" for nodes without the zone label.
func zoneHeading(zone string) string {
	if zone == "(no zone)" {
		return ""
	}
	return zone
}

// simulateOutput runs manager simulate and returns its stdout.
func simulateOutput(t *testing.T, args []string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := runSimulate(args, &stdout, &stderr); code != 0 {
		t.Fatalf("manager simulate %s: exit code %d, stderr:\n%s", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.Bytes()
}

// htmlFixture writes the example cluster with a third zone, of node-c1 (a copy of node-b2), and
// node-x1 without a zone label, and the example workload with a pod pinned to node-x1, which both
// profiles place there: spread and binpack then move some pods and not others. It returns the
// two files.
func htmlFixture(t *testing.T) (cluster, workload string) {
	t.Helper()
	data, err := os.ReadFile(simCluster)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	start := strings.Index(s, "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: node-b2")
	if start < 0 {
		t.Fatalf("%s has no node-b2 to copy", simCluster)
	}
	end := start + 1 + strings.Index(s[start+1:], "- apiVersion")
	nodeB2 := s[start:end]
	zoneC := strings.ReplaceAll(strings.ReplaceAll(nodeB2, "node-b2", "node-c1"), "zone-b", "zone-c")
	noZone := strings.ReplaceAll(strings.ReplaceAll(nodeB2, "node-b2", "node-x1"), "      topology.kubernetes.io/zone: zone-b\n", "")
	if !strings.Contains(zoneC, "zone-c") || strings.Contains(noZone, "zone") {
		t.Fatalf("node-b2 of %s is not in the shape htmlFixture edits:\n%s", simCluster, nodeB2)
	}
	dir := t.TempDir()
	cluster = filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cluster, []byte(s[:end]+zoneC+noZone+s[end:]), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err = os.ReadFile(simWorkload); err != nil {
		t.Fatal(err)
	}
	const pinned = `---
apiVersion: v1
kind: Pod
metadata: {name: pinned, namespace: default}
spec:
  nodeSelector: {kubernetes.io/hostname: node-x1}
  containers:
  - {name: pinned, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: "1"}}}
`
	workload = filepath.Join(dir, "workload.yaml")
	if err := os.WriteFile(workload, append(data, pinned...), 0o644); err != nil {
		t.Fatal(err)
	}
	return cluster, workload
}

// snapshotNodes are the nodes of a snapshot file with their zones.
func snapshotNodes(t *testing.T, file string) map[string]string {
	t.Helper()
	objs, err := readObjectFile(file)
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]string{}
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			nodes[n.Name] = n.Labels[defaultZoneLabel]
		}
	}
	zones := map[string]bool{}
	for _, z := range nodes {
		zones[z] = true
	}
	if len(nodes) != 6 || len(zones) != 4 {
		t.Fatalf("the snapshot has nodes %v, want the example's 4, node-c1 and node-x1, in three zones and none", nodes)
	}
	return nodes
}
