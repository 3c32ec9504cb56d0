package simulate

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

func runOf(pods ...PodResult) RunReport {
	r := RunReport{}
	for _, p := range pods {
		r.Pods = append(r.Pods, PodReport{PodResult: p})
		if p.Node == "" {
			r.Summary.Unschedulable++
		}
	}
	return r
}

func TestCompareRuns(t *testing.T) {
	bound := func(pod, node string) PodResult { return PodResult{Pod: pod, Node: node} }
	refused := func(pod string) PodResult { return PodResult{Pod: pod, Reason: "no"} }
	tests := []struct {
		name               string
		report             *Report
		hasFrom            bool
		wantMoved, wantAdd int
		wantNewly          []string
	}{
		{
			name:      "same placements",
			report:    &Report{Runs: []RunReport{runOf(bound("a", "n1"), refused("b")), runOf(bound("a", "n1"), refused("b"))}},
			hasFrom:   true,
			wantMoved: 0, wantAdd: 0,
		},
		{
			name:      "a pod moves, one is newly unschedulable, one was already",
			report:    &Report{Runs: []RunReport{runOf(bound("a", "n1"), bound("b", "n1"), refused("c")), runOf(bound("a", "n2"), refused("b"), refused("c"))}},
			hasFrom:   true,
			wantMoved: 2, wantAdd: 1, wantNewly: []string{"b"},
		},
		{
			name:      "the new configuration binds a pod the running one refused",
			report:    &Report{Runs: []RunReport{runOf(refused("a"), bound("b", "n1")), runOf(bound("a", "n1"), refused("b"))}},
			hasFrom:   true,
			wantMoved: 2, wantAdd: 0, wantNewly: []string{"b"},
		},
		{
			name:      "a new profile is compared with nothing",
			report:    &Report{Runs: []RunReport{runOf(bound("a", "n1"), refused("b"))}},
			wantMoved: 1, wantAdd: 1, wantNewly: []string{"b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := CompareRuns(tt.report, tt.hasFrom)
			var newly []string
			for _, p := range r.NewlyUnschedulable {
				newly = append(newly, p.Pod)
			}
			if r.Moved != tt.wantMoved || r.AddedUnschedulable() != tt.wantAdd {
				t.Errorf("moved %d, added unschedulable %d; want %d, %d", r.Moved, r.AddedUnschedulable(), tt.wantMoved, tt.wantAdd)
			}
			if diff := cmp.Diff(tt.wantNewly, newly); diff != "" {
				t.Errorf("newly unschedulable (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProfileWorkload(t *testing.T) {
	at := func(p *corev1.Pod, sched, node string, created int, priority int32) *corev1.Pod {
		p.Namespace, p.Spec.SchedulerName, p.Spec.NodeName = "default", sched, node
		p.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, created, 0, 0, time.UTC))
		p.Spec.Priority = ptr.To(priority)
		return p
	}
	done := at(pod("done", "1"), "sp", "n1", 0, 0)
	done.Status.Phase = corev1.PodSucceeded
	c := &Cluster{Objects: []runtime.Object{
		node("n1", "a", "4"),
		at(pod("old", "1"), "sp", "n1", 1, 0),
		at(pod("other", "1"), "default-scheduler", "n1", 0, 0),
		at(pod("pending", "1"), "sp", "", 2, 0),
		at(pod("urgent", "1"), "sp", "n1", 3, 100),
		done,
	}}
	rest, w, total := ProfileWorkload(c, "sp", 2)
	var names []string
	for _, p := range w.Pods {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"urgent", "old"}, names); diff != "" || total != 3 {
		t.Errorf("total %d, want 3; pods (-want +got):\n%s", total, diff)
	}
	var kept []string
	for _, o := range rest.Objects {
		if p, ok := o.(*corev1.Pod); ok {
			kept = append(kept, p.Name)
		}
	}
	if diff := cmp.Diff([]string{"other", "done"}, kept); diff != "" {
		t.Errorf("the cluster keeps (-want +got):\n%s", diff)
	}
}

// TestPreviewNodePoolMatchingNothing previews the change of a profile whose pods run to a node
// pool no node is in: every pod moves and is newly unschedulable, with NodePool's reason.
func TestPreviewNodePoolMatchingNothing(t *testing.T) {
	render := func(p *v1alpha1.SchedulerProfile) Profile {
		cfg, err := profile.Render(p, profile.Settings{Namespace: "ns"})
		if err != nil {
			t.Fatal(err)
		}
		return Profile{Name: p.Name, Config: cfg.YAML}
	}
	from := render(&v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "sp"}})
	to := render(&v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "sp"}, Spec: v1alpha1.SchedulerProfileSpec{
		Plugins:      &v1alpha1.Plugins{MultiPoint: v1alpha1.PluginSet{Enabled: []v1alpha1.Plugin{{Name: "NodePool"}}}},
		PluginConfig: []v1alpha1.PluginConfig{{Name: "NodePool", Args: runtime.RawExtension{Raw: []byte(`{"nodeSelector":{"matchLabels":{"pool":"none"}}}`)}}},
	}})
	c := &Cluster{Objects: []runtime.Object{node("n1", "a", "4"), node("n2", "b", "4")}}
	for i, name := range []string{"p0", "p1", "p2"} {
		p := pod(name, "1")
		p.Namespace, p.Spec.SchedulerName = "default", "sp"
		if i < 2 {
			p.Spec.NodeName = "n1"
		}
		c.Objects = append(c.Objects, p)
	}
	r, err := Preview(t.Context(), c, PreviewInput{SchedulerName: "sp", From: &from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	if r.Pods != 3 || r.Total != 3 || r.Moved != 3 || r.From.Unschedulable != 0 || r.To.Unschedulable != 3 || r.AddedUnschedulable() != 3 || r.From.NodesUsed == 0 {
		t.Errorf("preview = %+v, from %+v, to %+v; want 3 pods, 3 moved, 0 then 3 unschedulable", r, *r.From, r.To)
	}
	if len(r.NewlyUnschedulable) != 3 || !strings.Contains(r.NewlyUnschedulable[0].Reason, "node pool") {
		t.Errorf("newly unschedulable = %+v, want 3 with NodePool's reason", r.NewlyUnschedulable)
	}
}
