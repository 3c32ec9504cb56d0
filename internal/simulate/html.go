package simulate

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
)

//go:embed report.html.tmpl
var htmlTemplate string

// htmlPage is parsed once: the template is part of the binary.
var htmlPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"shade": shade,
}).Parse(htmlTemplate))

// htmlRun is one profile's grid: its nodes grouped by zone, and its unschedulable pods.
type htmlRun struct {
	Profile       string
	Summary       Summary
	Stopped       string
	Zones         []htmlZone
	Unschedulable []PodReport
}

type htmlZone struct {
	Zone  string
	Nodes []htmlNode
}

type htmlNode struct {
	NodeReport
	// Moved are the node's pods that the other profile places elsewhere.
	Moved map[string]bool
}

// WriteHTML writes the report as one self-contained page: no scripts, fonts or requests. Per
// profile a grid of one cell per node, grouped by zone, shaded by requested CPU, with the pods
// placed on it; the unschedulable pods and their reasons below; with two profiles, the grids
// side by side and the pods that move marked.
func (r *Report) WriteHTML(w io.Writer) error {
	moved := map[string]bool{}
	for _, m := range r.Moved {
		moved[m.Pod] = true
	}
	var runs []htmlRun
	for _, run := range r.Runs {
		hr := htmlRun{Profile: run.Profile, Summary: run.Summary, Stopped: run.Stopped}
		for _, n := range run.Nodes {
			if len(hr.Zones) == 0 || hr.Zones[len(hr.Zones)-1].Zone != n.Zone {
				hr.Zones = append(hr.Zones, htmlZone{Zone: n.Zone})
			}
			z := &hr.Zones[len(hr.Zones)-1]
			hn := htmlNode{NodeReport: n, Moved: map[string]bool{}}
			for _, p := range n.Pods {
				hn.Moved[p] = moved[p]
			}
			z.Nodes = append(z.Nodes, hn)
		}
		for _, p := range run.Pods {
			if p.Node == "" {
				hr.Unschedulable = append(hr.Unschedulable, p)
			}
		}
		runs = append(runs, hr)
	}
	return htmlPage.Execute(w, struct {
		Runs  []htmlRun
		Moved int
		Pods  int
	}{runs, len(r.Moved), len(r.Runs[0].Pods)})
}

// shade is the background of a node's cell: from white (nothing requested) to a blue (all of
// its CPU) still light enough for the page's text (a contrast of 5.6), and red beyond.
func shade(cpu float64) template.CSS {
	if cpu > 100 {
		return "background:#e06666"
	}
	l := 97 - int(cpu*0.35)
	return template.CSS(fmt.Sprintf("background:hsl(210,70%%,%d%%)", l))
}
