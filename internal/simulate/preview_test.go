package simulate

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

func TestComparePreview(t *testing.T) {
	running, next := &Profile{Name: "rev-1"}, Profile{Name: "rev-2"}
	before := []PodResult{{Pod: "ns/a", Node: "n1"}, {Pod: "ns/b", Node: "n1"}, {Pod: "ns/c", Reason: "too big"}, {Pod: "ns/d", Node: "n2"}}
	tests := []struct {
		name    string
		running *Profile
		after   []PodResult
		want    *Preview
	}{
		{
			name:    "one moves, one is newly unschedulable, one stays unschedulable",
			running: running,
			after:   []PodResult{{Pod: "ns/a", Node: "n1"}, {Pod: "ns/b", Node: "n3"}, {Pod: "ns/c", Reason: "still too big"}, {Pod: "ns/d", Reason: "no pool"}},
			want: &Preview{
				Pods:               4,
				Moved:              []Move{{Pod: "ns/b", From: "n1", To: "n3"}, {Pod: "ns/d", From: "n2"}},
				Running:            &RevisionOutcome{Profile: "rev-1", Bound: 3, Unschedulable: 1, NodesUsed: 2},
				New:                RevisionOutcome{Profile: "rev-2", Bound: 2, Unschedulable: 2, NodesUsed: 2},
				NewlyUnschedulable: []PodResult{{Pod: "ns/d", Reason: "no pool"}},
			},
		},
		{
			name:    "a pod the new revision did not simulate is not compared",
			running: running,
			after:   []PodResult{{Pod: "ns/a", Node: "n1"}, {Pod: "ns/b", Node: "n1"}},
			want: &Preview{
				Pods:    2,
				Running: &RevisionOutcome{Profile: "rev-1", Bound: 3, Unschedulable: 1, NodesUsed: 2},
				New:     RevisionOutcome{Profile: "rev-2", Bound: 2, NodesUsed: 1},
			},
		},
		{
			name:  "a new profile is previewed against nothing",
			after: []PodResult{{Pod: "ns/a", Node: "n1"}, {Pod: "ns/b", Reason: "no pool"}},
			want: &Preview{
				Pods:               2,
				New:                RevisionOutcome{Profile: "rev-2", Bound: 1, Unschedulable: 1, NodesUsed: 1},
				NewlyUnschedulable: []PodResult{{Pod: "ns/b", Reason: "no pool"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, comparePreview(tt.running, before, next, tt.after)); diff != "" {
				t.Errorf("preview (-want +got):\n%s", diff)
			}
		})
	}
}

// renderYAML renders a SchedulerProfile written as YAML.
func renderYAML(t *testing.T, doc string) Profile {
	t.Helper()
	var p v1alpha1.SchedulerProfile
	if err := yaml.UnmarshalStrict([]byte(doc), &p); err != nil {
		t.Fatal(err)
	}
	cfg, err := profile.Render(&p, profile.Settings{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	return Profile{Name: p.Name, Config: cfg.YAML}
}

const poolProfile = `
apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata:
  name: %s
spec:
  plugins:
    multiPoint:
      enabled:
      - name: NodePool
  pluginConfig:
  - name: NodePool
    args:
      nodeSelector:
        matchLabels:
          pool: %s
`

// poolCase is tiesCase with the nodes outside zone-2 in pool batch, and the running revision: a
// NodePool profile of pool batch.
func poolCase(t *testing.T) (*Cluster, *Workload, Profile) {
	c, w := tiesCase()
	for _, o := range c.Objects {
		if n, ok := o.(*corev1.Node); ok && n.Labels[zoneLabel] != "zone-2" {
			n.Labels["pool"] = "batch"
		}
	}
	return c, w, renderYAML(t, fmt.Sprintf(poolProfile, "pool", "batch"))
}

// TestPreviewChange previews, on the same cluster and workload, a change of a node pool's
// selector to a value no node carries (every pod the running revision binds is newly
// unschedulable, with NodePool's reason) and a change that keeps the placements (nothing moves).
func TestPreviewChange(t *testing.T) {
	c, w, running := poolCase(t)

	typo, err := PreviewChange(context.Background(), &running, renderYAML(t, fmt.Sprintf(poolProfile, "pool", "bacth")), c, w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if typo.Pods != 40 || typo.Running.Bound != 40 || typo.Running.NodesUsed == 0 || typo.New.Unschedulable != 40 || typo.New.NodesUsed != 0 || len(typo.Moved) != 40 || len(typo.NewlyUnschedulable) != 40 {
		t.Fatalf("a selector no node matches: want 40 pods, all bound before and unschedulable after; got %+v, running %+v", typo, typo.Running)
	}
	if reason := typo.NewlyUnschedulable[0].Reason; !strings.Contains(reason, "0/24 nodes are available") {
		t.Errorf("the newly unschedulable pod's reason %q is not the scheduler's", reason)
	}

	same, err := PreviewChange(context.Background(), &running, renderYAML(t, fmt.Sprintf(poolProfile, "pool-renamed", "batch")), c, w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if same.Pods != 40 || len(same.Moved) != 0 || len(same.NewlyUnschedulable) != 0 || same.New.Bound != 40 || same.New.NodesUsed != same.Running.NodesUsed {
		t.Fatalf("an equivalent revision: want nothing moved; got %+v, running %+v", same, same.Running)
	}

	fresh, err := PreviewChange(context.Background(), nil, renderYAML(t, fmt.Sprintf(poolProfile, "pool", "bacth")), c, w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Running != nil || fresh.Pods != 40 || len(fresh.NewlyUnschedulable) != 40 {
		t.Fatalf("a new profile with a selector no node matches: want its 40 pods newly unschedulable; got %+v", fresh)
	}
}

// TestPreviewChangeSharesCPULimit: the two simulations of a preview share its CPU time limit.
// With 1ms, the running revision's simulation spends it and stops, and the new revision's does
// not start: both say they stopped at the preview's CPU time limit, and no pod is compared. With
// an ample limit, the preview is the one without a limit.
func TestPreviewChangeSharesCPULimit(t *testing.T) {
	c, w := manyPodsCase()
	running, next := defaultProfile(t), defaultProfile(t)
	next.Name = "next"
	spent, err := PreviewChange(context.Background(), &running, next, c, w, Options{CPULimit: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	notStarted := fmt.Sprintf("the simulation stopped at its CPU time limit of 1ms, with 0 of %d pods decided: the other %d were not simulated", len(w.Pods), len(w.Pods))
	if !spent.Running.StoppedByCPU || !strings.HasPrefix(spent.Running.Stopped, "the simulation stopped at its CPU time limit of 1ms, with ") {
		t.Errorf("the running revision's outcome %+v does not say it stopped at the CPU time limit of 1ms", spent.Running)
	}
	if !spent.New.StoppedByCPU || spent.New.Stopped != notStarted || spent.New.Bound+spent.New.Unschedulable != 0 || spent.Pods != 0 {
		t.Errorf("the new revision's outcome %+v (%d pods compared), want no pod decided and %q", spent.New, spent.Pods, notStarted)
	}

	c, w = tiesCase()
	unlimited, err := PreviewChange(context.Background(), &running, next, c, w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ample, err := PreviewChange(context.Background(), &running, next, c, w, Options{CPULimit: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(unlimited, ample); diff != "" {
		t.Errorf("an ample CPU time limit changed the preview (-without +with):\n%s", diff)
	}
}

// TestPreviewChangeBothAtOnce: simulating the two revisions at the same time gives the preview of
// simulating them one after the other, and the CPU time limit still bounds the two together:
// with 1ms, both stop at it.
func TestPreviewChangeBothAtOnce(t *testing.T) {
	c, w, running := poolCase(t)
	for _, next := range []Profile{
		renderYAML(t, fmt.Sprintf(poolProfile, "pool", "bacth")),
		renderYAML(t, fmt.Sprintf(poolProfile, "pool-renamed", "batch")),
		defaultProfile(t),
	} {
		oneByOne, err := PreviewChange(context.Background(), &running, next, c, w, Options{})
		if err != nil {
			t.Fatal(err)
		}
		atOnce, err := PreviewChange(context.Background(), &running, next, c, w, Options{BothAtOnce: true})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(oneByOne, atOnce); diff != "" {
			t.Errorf("%s: the preview with both at once (-one by one +at once):\n%s", next.Name, diff)
		}
	}

	c, w = manyPodsCase()
	next := defaultProfile(t)
	next.Name = "next"
	spent, err := PreviewChange(context.Background(), &running, next, c, w, Options{CPULimit: time.Millisecond, BothAtOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	if !spent.Running.StoppedByCPU || !spent.New.StoppedByCPU || spent.Pods == len(w.Pods) {
		t.Errorf("both at once with 1ms of CPU: running %+v, new %+v, %d of %d pods compared; want both stopped at the CPU time limit", spent.Running, spent.New, spent.Pods, len(w.Pods))
	}
}
