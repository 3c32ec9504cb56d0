package simulate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// defaultProfile is the scheduler of a SchedulerProfile with an empty spec.
func defaultProfile(t testing.TB) Profile {
	t.Helper()
	cfg, err := profile.Render(&v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, profile.Settings{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	return Profile{Name: "default", Config: cfg.YAML}
}

func node(name, zone, cpu string) *corev1.Node {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"topology.kubernetes.io/zone": zone, "kubernetes.io/hostname": name}},
		Status:     corev1.NodeStatus{Allocatable: res, Capacity: res, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

func pod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}}},
	}
}

// TestRunDeterministic schedules pods on many nodes of equal score, where the scheduler's
// parallel Filter would make the choice change from run to run, and wants the same placements
// every time.
func TestRunDeterministic(t *testing.T) {
	cluster := &Cluster{}
	for i := range 60 {
		cluster.Objects = append(cluster.Objects, node(fmt.Sprintf("node-%02d", i), fmt.Sprintf("zone-%d", i%3), "8"))
	}
	var pods []*corev1.Pod
	for i := range 40 {
		pods = append(pods, pod(fmt.Sprintf("p-%d", i), "500m"))
	}
	var first []PodResult
	for run := range 3 {
		got, err := Run(context.Background(), defaultProfile(t), cluster, &Workload{Pods: pods}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(pods) {
			t.Fatalf("%d results for %d pods", len(got), len(pods))
		}
		if run == 0 {
			first = got
			continue
		}
		if diff := cmp.Diff(first, got); diff != "" {
			t.Fatalf("run %d placed the pods differently (-first +this):\n%s", run, diff)
		}
	}
}

// TestRunQueueOrderAndBindings: a pod of a higher priority, later in the file, is scheduled
// first, as the queue sort orders them; the node it took is full for the next pod, which shows
// that each binding is seen by the pods after it.
func TestRunQueueOrderAndBindings(t *testing.T) {
	cluster := &Cluster{Objects: []runtime.Object{
		node("only", "z", "2"),
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
	}}
	low, high := pod("low", "2"), pod("high", "2")
	high.Spec.PriorityClassName = "high"
	got, err := Run(context.Background(), defaultProfile(t), cluster, &Workload{Pods: []*corev1.Pod{low, high}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Pod != "default/high" || got[0].Node != "only" {
		t.Fatalf("want default/high first, bound to only; got %+v", got)
	}
	if got[1].Pod != "default/low" || got[1].Node != "" || !strings.Contains(got[1].Reason, "0/1 nodes are available: 1 Insufficient cpu") {
		t.Errorf("want default/low unschedulable for Insufficient cpu, got %+v", got[1])
	}
}

// TestRunPreemption: a pod of a higher priority that fits only where a running pod is preempts
// it and is bound there, as in a cluster, and the report names the evicted pod and no longer
// counts its requests. The pod after it, which the freed room would fit, finds the room kept for
// the preemptor: the same in every run.
func TestRunPreemption(t *testing.T) {
	victim := pod("victim", "2")
	victim.Namespace, victim.Spec.NodeName, victim.Status.Phase = "default", "only", corev1.PodRunning
	cluster := &Cluster{Objects: []runtime.Object{
		node("only", "z", "2"), victim,
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
	}}
	high, later := pod("high", "2"), pod("later", "2")
	high.Spec.PriorityClassName = "high"
	w := &Workload{Pods: []*corev1.Pod{high, later}}
	for range 3 {
		got, err := Run(context.Background(), defaultProfile(t), cluster, w, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Node != "only" || !slices.Equal(got[0].Preempted, []string{"default/victim"}) {
			t.Fatalf("want default/high bound to only, preempting default/victim; got %+v", got)
		}
		if got[1].Node != "" || !strings.Contains(got[1].Reason, "Insufficient cpu") {
			t.Fatalf("want default/later unschedulable for Insufficient cpu; got %+v", got[1])
		}
		run := NewRunReport("default", cluster, w, got, nil, "topology.kubernetes.io/zone")
		if run.Summary.Preempted != 1 || run.Nodes[0].CPU != 100 {
			t.Fatalf("want 1 preempted and node only at 100%% cpu (the victim's requests gone); got %d and %v%%", run.Summary.Preempted, run.Nodes[0].CPU)
		}
		var text strings.Builder
		if err := (&Report{Runs: []RunReport{run}}).WriteText(&text, nil); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), "default/high   only  preempted default/victim") || !strings.Contains(text.String(), "1 running pods preempted") {
			t.Fatalf("the text report does not name the preempted pod:\n%s", text.String())
		}
		var page strings.Builder
		if err := (&Report{Runs: []RunReport{run}}).WriteHTML(&page); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(page.String(), "1 of 1 nodes used, 1 running pods preempted;") {
			t.Fatalf("the page does not count the preempted pod:\n%s", page.String())
		}
	}
}

func TestRunUnknownPriorityClass(t *testing.T) {
	p := pod("p", "1")
	p.Spec.PriorityClassName = "missing"
	_, err := Run(context.Background(), defaultProfile(t), &Cluster{Objects: []runtime.Object{node("n", "z", "2")}}, &Workload{Pods: []*corev1.Pod{p}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "PriorityClass missing") {
		t.Errorf("want an error naming PriorityClass missing, got %v", err)
	}
}

func TestExpandWorkload(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}}, Spec: pod("t", "1").Spec}
	objs := []runtime.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: tmpl}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: appsv1.StatefulSetSpec{Template: tmpl}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](5), Completions: ptr.To[int32](3), Template: tmpl}},
		pod("p", "1"),
	}
	w, err := ExpandWorkload(objs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range w.Pods {
		names = append(names, p.Namespace+"/"+p.Name+"="+p.Labels["app"])
	}
	want := []string{"ns/d-0=a", "ns/d-1=a", "/s-0=a", "/j-0=a", "/j-1=a", "/j-2=a", "/p=x"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	if len(w.Controllers) != 2 {
		t.Errorf("want the Deployment's ReplicaSet and the StatefulSet in the cluster, got %d controllers", len(w.Controllers))
	}
	if _, err := ExpandWorkload([]runtime.Object{&corev1.Node{}}); err == nil {
		t.Error("a Node in a workload is accepted")
	}
}

func TestReadObjectsList(t *testing.T) {
	in := `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: a}}
- {apiVersion: v1, kind: Pod, metadata: {name: p}}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
`
	objs, err := ReadObjects(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, fmt.Sprintf("%T", o))
	}
	if diff := cmp.Diff([]string{"*v1.Node", "*v1.Pod", "*v1.Namespace"}, kinds); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}

// TestWriteHTML renders a comparison as a page: one cell per node and profile, shaded, the
// moved pods marked, the unschedulable pod and its reason listed; and nothing the page would
// fetch (no script, stylesheet, font or image from elsewhere).
func TestWriteHTML(t *testing.T) {
	cluster := &Cluster{Objects: []runtime.Object{node("a1", "zone-a", "2"), node("a2", "zone-a", "2"), node("b1", "zone-b", "2")}}
	w := &Workload{Pods: []*corev1.Pod{pod("web", "1"), pod("huge", "8")}}
	run := func(name, node string) RunReport {
		return NewRunReport(name, cluster, w, []PodResult{{Pod: "default/web", Node: node}, {Pod: "default/huge", Reason: "0/3 nodes are available: 3 Insufficient cpu."}}, nil, "topology.kubernetes.io/zone")
	}
	r := &Report{Runs: []RunReport{run("one", "a1"), run("two", "b1")}}
	r.Moved = Compare(r.Runs[0], r.Runs[1])
	var out strings.Builder
	if err := r.WriteHTML(&out); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	if got := strings.Count(page, `<div class="node"`); got != 6 {
		t.Errorf("%d node cells, want 3 per profile", got)
	}
	for _, want := range []string{"background:hsl(210,70%,80%)", `class="pod moved">default/web<`, "0/3 nodes are available: 3 Insufficient cpu.", "1 of 2 pods move"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not contain %q", want)
		}
	}
	for _, external := range []string{"<script", "<link", "src=", "url(", "@import", "http:", "https:"} {
		if strings.Contains(page, external) {
			t.Errorf("the page contains %q: it must be self-contained", external)
		}
	}
}

// TestReadObjectsBlockList: a List in block style, as ListWriter and kubectl write one, is
// decoded item by item into the objects the whole document decodes to, block scalars, blank
// lines and the List's metadata included; a List in any other shape is decoded whole, and an
// item that does not decode is reported by its index.
func TestReadObjectsBlockList(t *testing.T) {
	annotated := pod("annotated", "1")
	annotated.Namespace = "default"
	annotated.Annotations = map[string]string{
		"script":  "#!/bin/sh\n\n  indented line\n- not an item\nlast: line\n",
		"leading": "  two spaces",
		"json":    `{"a": [1, 2]}`,
	}
	var list strings.Builder
	w := NewListWriter(&list)
	for _, obj := range []runtime.Object{node("a", "zone-a", "4"), annotated, pod("plain", "500m")} {
		obj = obj.DeepCopyObject()
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			t.Fatal(err)
		}
		obj.GetObjectKind().SetGroupVersionKind(gvks[0])
		if err := w.Write(obj); err != nil {
			t.Fatal(err)
		}
	}
	kubectl := "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: ns\n\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: b\nkind: List\nmetadata:\n  resourceVersion: \"\"\n"
	for name, tc := range map[string]struct {
		doc   string
		items int
	}{
		"ListWriter": {list.String(), 3},
		"kubectl":    {kubectl, 2},
		"empty":      {"apiVersion: v1\nkind: List\nitems: []\n", 0},
	} {
		t.Run(name, func(t *testing.T) {
			items, ok := blockListItems([]byte(tc.doc))
			if !ok || len(items) != tc.items {
				t.Fatalf("split into %d items (block style: %v), want %d", len(items), ok, tc.items)
			}
			got, err := decodeDocument([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			want, err := decodeWhole([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("item by item (-whole +items):\n%s", diff)
			}
		})
	}
	for name, doc := range map[string]string{
		"flow items":     "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: a}}\n",
		"indented items": "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: Node\n",
		"comment":        "apiVersion: v1\nkind: List\n# nodes\nitems:\n- apiVersion: v1\n  kind: Node\n",
		"anchor":         "apiVersion: v1\nkind: List\nitems:\n- &n\n  apiVersion: v1\n",
		"CRLF":           "apiVersion: v1\r\nkind: List\r\nitems: []\r\n",
		"other kind":     "apiVersion: v1\nkind: NodeList\nitems: []\n",
		"no items":       "apiVersion: v1\nkind: List\n",
	} {
		if _, ok := blockListItems([]byte(doc)); ok {
			t.Errorf("%s: split item by item, want the document decoded whole", name)
		}
	}
	_, err := ReadObjects(strings.NewReader("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n- apiVersion: v1\n  kind: NoSuchKind\n"))
	if err == nil || !strings.Contains(err.Error(), "items[1]") {
		t.Errorf("an item of no known kind: error %v, want one that names items[1]", err)
	}
}
