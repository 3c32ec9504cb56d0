package simulate

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Report is the outcome of one simulation, or of two with --compare.
type Report struct {
	// Runs are the simulations, the profile under test first.
	Runs []RunReport `json:"runs"`
	// Moved are the pods that the second run placed elsewhere than the first (with --compare).
	Moved []Move `json:"moved,omitempty"`
}

// RunReport is one profile's simulation.
type RunReport struct {
	Profile string      `json:"profile"`
	Pods    []PodReport `json:"pods"`
	Summary Summary     `json:"summary"`
	// Nodes are the cluster's nodes after the placements, by zone and name.
	Nodes []NodeReport `json:"nodes"`
	// Stopped says that the simulation reached its time limit, and how far it got: Pods then
	// holds only the pods the scheduler decided, and Summary.NotSimulated counts the others.
	Stopped string `json:"stopped,omitempty"`
}

// NodeReport is one node after the placements.
type NodeReport struct {
	Name string `json:"name"`
	// Zone is the node's value of the summary's zone label.
	Zone string `json:"zone,omitempty"`
	// CPU is the requested share of the node's allocatable CPU, in percent, running pods included.
	CPU float64 `json:"cpu"`
	// Pods are the workload's pods placed on the node.
	Pods []string `json:"pods,omitempty"`
}

// PodReport is a pod's outcome with the chosen labels of its node.
type PodReport struct {
	PodResult  `json:",inline"`
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`
}

// Move is a pod that two profiles placed differently; "" is unschedulable.
type Move struct {
	Pod  string `json:"pod"`
	From string `json:"from"`
	To   string `json:"to"`
}

// Summary counts what a comparison relies on.
type Summary struct {
	Bound         int `json:"bound"`
	Unschedulable int `json:"unschedulable"`
	// Preempted counts the cluster's running pods that the workload's pods preempted.
	Preempted int `json:"preempted,omitempty"`
	// NotSimulated counts the workload's pods without a result: the simulation stopped at its
	// time limit before the scheduler decided them.
	NotSimulated int `json:"notSimulated,omitempty"`
	// NodesUsed is how many nodes the workload's pods went to, of Nodes.
	NodesUsed int `json:"nodesUsed"`
	Nodes     int `json:"nodes"`
	// ZoneLabel is the node label PodsPerZone counts by.
	ZoneLabel   string         `json:"zoneLabel"`
	PodsPerZone map[string]int `json:"podsPerZone"`
	// CPU and Memory are the requested share of each node's allocatable, in percent, after the
	// placements, with the pods the cluster ran already.
	CPU    Spread `json:"cpu"`
	Memory Spread `json:"memory"`
}

// Spread is the distribution of a percentage over the nodes.
type Spread struct {
	Min    float64 `json:"min"`
	Mean   float64 `json:"mean"`
	Max    float64 `json:"max"`
	StdDev float64 `json:"stdDev"`
}

// NewRunReport summarizes the results of one profile on cluster for workload, with the node
// labels columns of each pod and the pods per zone counted by zoneLabel.
func NewRunReport(name string, cluster *Cluster, workload *Workload, results []PodResult, columns []string, zoneLabel string) RunReport {
	nodes := cluster.Nodes()
	byName := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	r := RunReport{Profile: name, Summary: Summary{Nodes: len(nodes), ZoneLabel: zoneLabel, PodsPerZone: map[string]int{}}}
	used := map[string]bool{}
	requested := map[string]corev1.ResourceList{}
	evicted := map[string]bool{}
	for _, res := range results {
		for _, v := range res.Preempted {
			evicted[v] = true
		}
	}
	r.Summary.Preempted = len(evicted)
	for _, p := range cluster.BoundPods() {
		if !evicted[podKey(p)] {
			addRequests(requested, p.Spec.NodeName, p)
		}
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range workload.Pods {
		pods[podKey(p)] = p
	}
	for _, res := range results {
		pr := PodReport{PodResult: res}
		if res.Node == "" {
			r.Summary.Unschedulable++
			r.Pods = append(r.Pods, pr)
			continue
		}
		r.Summary.Bound++
		used[res.Node] = true
		if p := pods[res.Pod]; p != nil {
			addRequests(requested, res.Node, p)
		}
		node := byName[res.Node]
		if node != nil {
			r.Summary.PodsPerZone[node.Labels[zoneLabel]]++
			for _, c := range columns {
				if v, ok := node.Labels[c]; ok {
					if pr.NodeLabels == nil {
						pr.NodeLabels = map[string]string{}
					}
					pr.NodeLabels[c] = v
				}
			}
		}
		r.Pods = append(r.Pods, pr)
	}
	r.Summary.NodesUsed = len(used)
	r.Summary.NotSimulated = max(0, len(workload.Pods)-len(results))
	r.Nodes = nodeReports(nodes, zoneLabel, requested, r.Pods)
	r.Summary.CPU = spread(nodes, requested, corev1.ResourceCPU)
	r.Summary.Memory = spread(nodes, requested, corev1.ResourceMemory)
	return r
}

// nodeReports are the nodes by zone and name, with their requested CPU and the workload's pods.
func nodeReports(nodes []*corev1.Node, zoneLabel string, requested map[string]corev1.ResourceList, pods []PodReport) []NodeReport {
	placed := map[string][]string{}
	for _, p := range pods {
		if p.Node != "" {
			placed[p.Node] = append(placed[p.Node], p.Pod)
		}
	}
	out := make([]NodeReport, 0, len(nodes))
	for _, n := range nodes {
		nr := NodeReport{Name: n.Name, Zone: n.Labels[zoneLabel], Pods: placed[n.Name]}
		if alloc := n.Status.Allocatable[corev1.ResourceCPU]; !alloc.IsZero() {
			req := requested[n.Name][corev1.ResourceCPU]
			nr.CPU = math.Round(1000*float64(req.MilliValue())/float64(alloc.MilliValue())) / 10
		}
		out = append(out, nr)
	}
	slices.SortStableFunc(out, func(a, b NodeReport) int { return strings.Compare(a.Zone, b.Zone) })
	return out
}

// addRequests adds a pod's requests to those of node.
func addRequests(requested map[string]corev1.ResourceList, node string, pod *corev1.Pod) {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	sum := requested[node]
	if sum == nil {
		sum = corev1.ResourceList{}
		requested[node] = sum
	}
	for name, q := range reqs {
		v := sum[name]
		v.Add(q)
		sum[name] = v
	}
}

// spread is the distribution of requested/allocatable of one resource over the nodes.
func spread(nodes []*corev1.Node, requested map[string]corev1.ResourceList, name corev1.ResourceName) Spread {
	var shares []float64
	for _, n := range nodes {
		alloc := n.Status.Allocatable[name]
		if alloc.IsZero() {
			continue
		}
		req := requested[n.Name][name]
		shares = append(shares, 100*float64(req.MilliValue())/float64(alloc.MilliValue()))
	}
	if len(shares) == 0 {
		return Spread{}
	}
	s := Spread{Min: slices.Min(shares), Max: slices.Max(shares)}
	for _, v := range shares {
		s.Mean += v
	}
	s.Mean /= float64(len(shares))
	for _, v := range shares {
		s.StdDev += (v - s.Mean) * (v - s.Mean)
	}
	s.StdDev = math.Sqrt(s.StdDev / float64(len(shares)))
	return s.rounded()
}

// rounded keeps one decimal, so that reports compare equal across platforms' float printing.
func (s Spread) rounded() Spread {
	r := func(v float64) float64 { return math.Round(v*10) / 10 }
	return Spread{Min: r(s.Min), Mean: r(s.Mean), Max: r(s.Max), StdDev: r(s.StdDev)}
}

// Compare lists the pods that the two runs placed differently, in the first run's order; a pod
// that one of them did not simulate (it stopped at its time limit) is not compared.
func Compare(a, b RunReport) []Move {
	nodeOf := map[string]string{}
	for _, p := range b.Pods {
		nodeOf[p.Pod] = p.Node
	}
	var out []Move
	for _, p := range a.Pods {
		if to, ok := nodeOf[p.Pod]; ok && to != p.Node {
			out = append(out, Move{Pod: p.Pod, From: p.Node, To: to})
		}
	}
	return out
}

// Stopped is the first run that reached its time limit, or nil.
func (r *Report) Stopped() *RunReport {
	for i := range r.Runs {
		if r.Runs[i].Stopped != "" {
			return &r.Runs[i]
		}
	}
	return nil
}

// Unschedulable tells how many pods the profile under test left unschedulable.
func (r *Report) Unschedulable() int {
	if len(r.Runs) == 0 {
		return 0
	}
	return r.Runs[0].Summary.Unschedulable
}

// WriteText prints the report as tables: per pod its node, the columns' labels of the node and
// the scheduler's reason when it is not bound, or the running pods it preempted; with two runs,
// side by side; then the summaries.
func (r *Report) WriteText(w io.Writer, columns []string) error {
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	header := []string{"POD"}
	for _, run := range r.Runs {
		suffix := ""
		if len(r.Runs) > 1 {
			suffix = " (" + run.Profile + ")"
		}
		header = append(header, "NODE"+suffix)
		for _, c := range columns {
			header = append(header, columnName(c)+suffix)
		}
	}
	if len(r.Runs) > 1 {
		header = append(header, "MOVED")
	}
	header = append(header, "REASON")
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	byPod := make([]map[string]PodReport, len(r.Runs))
	for i, run := range r.Runs {
		byPod[i] = make(map[string]PodReport, len(run.Pods))
		for _, p := range run.Pods {
			byPod[i][p.Pod] = p
		}
	}
	for _, first := range r.Runs[0].Pods {
		row := []string{first.Pod}
		var reasons []string
		nodes := map[string]bool{}
		for i, run := range r.Runs {
			p, simulated := byPod[i][first.Pod]
			if !simulated {
				p.Reason = "not simulated"
			}
			row = append(row, orDash(p.Node))
			nodes[p.Node] = true
			for _, c := range columns {
				row = append(row, orDash(p.NodeLabels[c]))
			}
			if len(p.Preempted) > 0 {
				p.Reason = "preempted " + strings.Join(p.Preempted, ", ")
			}
			if p.Reason != "" {
				reason := p.Reason
				if len(r.Runs) > 1 {
					reason = run.Profile + ": " + reason
				}
				reasons = append(reasons, reason)
			}
		}
		if len(r.Runs) > 1 {
			row = append(row, map[bool]string{true: "*", false: ""}[len(nodes) > 1])
		}
		row = append(row, strings.Join(reasons, "; "))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The padding of an empty last column is trailing blanks.
	for _, line := range strings.SplitAfter(table.String(), "\n") {
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+strings.Repeat("\n", strings.Count(line, "\n"))); err != nil {
			return err
		}
	}
	for _, run := range r.Runs {
		s := run.Summary
		preempted := ""
		if s.Preempted > 0 {
			preempted = fmt.Sprintf(", %d running pods preempted", s.Preempted)
		}
		fmt.Fprintf(w, "\nProfile %s: %d bound, %d unschedulable, %d of %d nodes used%s\n", run.Profile, s.Bound, s.Unschedulable, s.NodesUsed, s.Nodes, preempted)
		if run.Stopped != "" {
			fmt.Fprintf(w, "  STOPPED: %s\n", run.Stopped)
		}
		var zones []string
		for _, z := range slices.Sorted(maps.Keys(s.PodsPerZone)) {
			zones = append(zones, fmt.Sprintf("%s %d", orDash(z), s.PodsPerZone[z]))
		}
		fmt.Fprintf(w, "  pods per %s: %s\n", s.ZoneLabel, orDash(strings.Join(zones, ", ")))
		fmt.Fprintf(w, "  requested cpu per node: min %.1f%%, mean %.1f%%, max %.1f%%, stddev %.1f\n", s.CPU.Min, s.CPU.Mean, s.CPU.Max, s.CPU.StdDev)
		fmt.Fprintf(w, "  requested memory per node: min %.1f%%, mean %.1f%%, max %.1f%%, stddev %.1f\n", s.Memory.Min, s.Memory.Mean, s.Memory.Max, s.Memory.StdDev)
	}
	if len(r.Runs) > 1 {
		fmt.Fprintf(w, "\n%d of %d pods move from %s to %s\n", len(r.Moved), len(r.Runs[0].Pods), r.Runs[0].Profile, r.Runs[1].Profile)
	}
	return nil
}

// columnName is a label key's header: its name after the prefix, upper case.
func columnName(label string) string {
	return strings.ToUpper(label[strings.LastIndex(label, "/")+1:])
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
