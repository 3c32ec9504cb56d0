package simulate

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

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
	rest, w, total := ProfileWorkload(c, []string{"sp"}, 2)
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

// TestPreviewProfileNodePoolMatchingNothing previews the change of a profile whose pods run to a node
// pool no node is in: every pod moves and is newly unschedulable, with NodePool's reason.
func TestPreviewProfileNodePoolMatchingNothing(t *testing.T) {
	render := func(p *v1alpha1.SchedulerProfile) Profile { return renderForTest(t, p) }
	from := render(&v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "sp"}})
	to := render(&v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "sp"}, Spec: v1alpha1.SchedulerProfileSpec{
		Plugins:      &v1alpha1.Plugins{MultiPoint: v1alpha1.PluginSet{Enabled: []v1alpha1.Plugin{{Name: "NodePool"}}}},
		PluginConfig: []v1alpha1.PluginConfig{{Name: "NodePool", Args: runtime.RawExtension{Raw: []byte(`{"nodeSelector":{"matchLabels":{"pool":"none"}}}`)}}},
	}})
	c := twoNodesThreePods()
	r, err := PreviewProfile(t.Context(), c, []string{"sp"}, &from, to, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Pods != 3 || r.Total != 3 || len(r.Moved) != 3 || r.Running.Unschedulable != 0 || r.New.Unschedulable != 3 || r.AddedUnschedulable() != 3 || r.Running.NodesUsed == 0 {
		t.Errorf("preview = %+v, running %+v, new %+v; want 3 pods, 3 moved, 0 then 3 unschedulable", r, *r.Running, r.New)
	}
	if len(r.NewlyUnschedulable) != 3 || !strings.Contains(r.NewlyUnschedulable[0].Reason, "node pool") {
		t.Errorf("newly unschedulable = %+v, want 3 with NodePool's reason", r.NewlyUnschedulable)
	}
}

// TestPreviewProfileRename previews a rename of a profile's scheduler name from sp to sp2 with
// the pods of both names: the pods of sp, two running and one pending, are newly unschedulable,
// for no scheduler of the new revision serves their name. On main before the workload took the
// names of both revisions, the preview of a rename had no pods (the workload was sp2's) and
// let the rename through.
func TestPreviewProfileRename(t *testing.T) {
	render := func(p *v1alpha1.SchedulerProfile) Profile { return renderForTest(t, p) }
	from := render(&v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "sp"}})
	to := render(&v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "sp"}, Spec: v1alpha1.SchedulerProfileSpec{SchedulerName: "sp2"}})
	c := twoNodesThreePods()
	r, err := PreviewProfile(t.Context(), c, []string{"sp", "sp2"}, &from, to, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Pods != 3 || r.Running.Unschedulable != 0 || r.New.Unschedulable != 3 || r.AddedUnschedulable() != 3 {
		t.Errorf("preview = %+v, running %+v, new %+v; want 3 pods, 0 then 3 unschedulable", r, *r.Running, r.New)
	}
	want := `no profile of this configuration serves scheduler name "sp" (it serves sp2): the pod would wait for a scheduler`
	if len(r.NewlyUnschedulable) != 3 || r.NewlyUnschedulable[0].Reason != want {
		t.Errorf("newly unschedulable = %+v, want 3 with the reason %q", r.NewlyUnschedulable, want)
	}
}

// renderForTest renders a profile as the operator rolls it out, to simulate it.
func renderForTest(t *testing.T, p *v1alpha1.SchedulerProfile) Profile {
	t.Helper()
	cfg, err := profile.Render(p, profile.Settings{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	return Profile{Name: p.Name, Config: cfg.YAML}
}

// twoNodesThreePods is a cluster of two nodes and three pods of scheduler name sp: p0 and p1
// running on n1, p2 pending.
func twoNodesThreePods() *Cluster {
	c := &Cluster{Objects: []runtime.Object{node("n1", "a", "4"), node("n2", "b", "4")}}
	for i, name := range []string{"p0", "p1", "p2"} {
		p := pod(name, "1")
		p.Namespace, p.Spec.SchedulerName = "default", "sp"
		if i < 2 {
			p.Spec.NodeName = "n1"
		}
		c.Objects = append(c.Objects, p)
	}
	return c
}

// TestEmptyProfilePreview: when the cluster has no pod of the names that the workload would take
// (pods of another name, a terminated one, one being deleted), HasProfilePods says so and
// EmptyProfilePreview is what PreviewProfile finds simulating the configurations; a pod of the
// name that waits makes HasProfilePods true.
func TestEmptyProfilePreview(t *testing.T) {
	render := func(p *v1alpha1.SchedulerProfile) Profile { return renderForTest(t, p) }
	from := render(&v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "sp"}})
	to := render(&v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "sp"}, Spec: v1alpha1.SchedulerProfileSpec{PercentageOfNodesToScore: ptr.To[int32](50)}})
	of := func(p *corev1.Pod, sched string) *corev1.Pod {
		p.Namespace, p.Spec.SchedulerName, p.Spec.NodeName = "default", sched, "n1"
		return p
	}
	done := of(pod("done", "1"), "sp")
	done.Status.Phase = corev1.PodFailed
	leaving := of(pod("leaving", "1"), "sp")
	leaving.DeletionTimestamp, leaving.Finalizers = ptr.To(metav1.Now()), []string{"test"}
	objects := []runtime.Object{node("n1", "a", "4"), of(pod("other", "1"), "default-scheduler"), done, leaving}

	client := fake.NewClientset(objects...)
	if has, err := HasProfilePods(t.Context(), client, []string{"sp"}); err != nil || has {
		t.Fatalf("HasProfilePods = %v, %v; want false: no pod of sp that waits or runs", has, err)
	}
	for _, running := range []*Profile{nil, &from} {
		want, err := PreviewProfile(t.Context(), &Cluster{Objects: objects}, []string{"sp"}, running, to, 0, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, EmptyProfilePreview(running, to)); diff != "" {
			t.Errorf("running %v: EmptyProfilePreview differs from the simulation's (-simulated +empty):\n%s", running != nil, diff)
		}
	}

	pending := of(pod("pending", "1"), "sp")
	pending.Spec.NodeName = ""
	if _, err := client.CoreV1().Pods("default").Create(t.Context(), pending, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if has, err := HasProfilePods(t.Context(), client, []string{"other-name", "sp"}); err != nil || !has {
		t.Errorf("HasProfilePods = %v, %v with a pending pod of sp; want true", has, err)
	}
}
