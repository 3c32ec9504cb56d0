package integration

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
	"github.com/schedops/scheduler-profile-operator/scheduler/projection"
)

// projectionAddedAffinity are NodeAffinity args whose addedAffinity keeps pods in zone z1 or z2.
const projectionAddedAffinity = `{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[` +
	`{"matchExpressions":[{"key":"zone","operator":"In","values":["z1"]}]},{"matchExpressions":[{"key":"zone","operator":"In","values":["z2"]}]}]}}}`

// waitForProjection waits until a dry-run pod made by mk comes back as want says: with the
// restriction projected (want true) or untouched.
func (k *cluster) waitForProjection(t *testing.T, what string, mk func() *corev1.Pod, r projection.Restriction, note string, want bool) {
	t.Helper()
	testutil.Eventually(t, assignTimeout, what, func(ctx context.Context) error {
		got, err := dryRunPod(ctx, k.admin, mk())
		if err != nil {
			return err
		}
		expected := mk()
		if want {
			projection.Project(expected, r, note)
		}
		return sameProjection(expected, got)
	})
}

// sameProjection compares what projection writes on a pod: its affinity and annotation.
func sameProjection(want, got *corev1.Pod) error {
	if !equality.Semantic.DeepEqual(want.Spec.Affinity, got.Spec.Affinity) {
		return fmt.Errorf("affinity (-want +got):\n%s", cmp.Diff(want.Spec.Affinity, got.Spec.Affinity))
	}
	key := schedulingv1alpha1.AnnotationProjectedNodeRestrictions
	if want.Annotations[key] != got.Annotations[key] {
		return fmt.Errorf("annotation %s %q, want %q", key, got.Annotations[key], want.Annotations[key])
	}
	return nil
}

// TestProjectionPolicy: the apiserver writes a served profile's node restrictions (NodePool's
// selector ANDed with addedAffinity's terms) onto the pods created with its scheduler name,
// exactly as projection.Project does in Go: a pod without affinity, with its own terms, with
// ORed terms, with an empty term, with a term by field; not onto a pod that opts out, names
// another scheduler, or once the profile turns projection off. A pod that a namespace label
// assigns is projected too, whichever policy the apiserver runs first.
func TestProjectionPolicy(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("project")
	p := testutil.MakeProfile(name).NodePool(map[string]string{"pool": "b"}).PluginConfig("NodeAffinity", projectionAddedAffinity).Obj()
	served := k.servedProfile(t, p)
	cfg, err := profile.Render(served, profile.Settings{Namespace: operatorNamespace})
	if err != nil {
		t.Fatal(err)
	}
	restrictions, err := projection.Of(cfg.YAML)
	if err != nil {
		t.Fatal(err)
	}
	r := restrictions[name]
	if len(r.Terms) != 2 {
		t.Fatalf("the profile's restriction has %d terms, want 2 (z1 or z2, each and pool=b): %+v", len(r.Terms), r)
	}
	note := r.Note(name)
	ns := k.assignedNamespace(t, "project")
	req := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	withTerms := func(pod *corev1.Pod, terms ...corev1.NodeSelectorTerm) *corev1.Pod {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
		return pod
	}
	ssd := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req("disk", corev1.NodeSelectorOpIn, "ssd")}}
	gpu := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req("gpu", corev1.NodeSelectorOpExists)}}
	byName := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "node-0")}}
	pod := func(n string) *corev1.Pod { return testutil.MakePod(n, ns).SchedulerName(name).Obj() }
	cases := []struct {
		name string
		pod  func() *corev1.Pod
		want bool
	}{
		{"without affinity", func() *corev1.Pod { return pod("bare") }, true},
		{"with its own term", func() *corev1.Pod { return withTerms(pod("own"), ssd) }, true},
		{"with ORed terms", func() *corev1.Pod { return withTerms(pod("ored"), ssd, gpu) }, true},
		{"with an empty term", func() *corev1.Pod { return withTerms(pod("empty"), corev1.NodeSelectorTerm{}, ssd) }, true},
		{"with a term by field", func() *corev1.Pod { return withTerms(pod("field"), byName) }, true},
		{"with pod affinity and preferences", func() *corev1.Pod {
			p := withTerms(pod("more"), ssd)
			p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.PreferredSchedulingTerm{{Weight: 5, Preference: gpu}}
			p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone"}}}
			return p
		}, true},
		{"opted out", func() *corev1.Pod {
			p := withTerms(pod("opted-out"), ssd)
			p.Annotations = map[string]string{schedulingv1alpha1.AnnotationProjectNodeRestrictions: "false"}
			return p
		}, false},
		{"another scheduler", func() *corev1.Pod { return testutil.MakePod("other", ns).SchedulerName("other").Obj() }, false},
	}
	k.waitForProjection(t, "the policy to project", cases[0].pod, r, note, true)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dryRunPod(t.Context(), k.admin, tc.pod())
			if err != nil {
				t.Fatal(err)
			}
			want := tc.pod()
			// The Go model agrees on which pods it writes, but for the scheduler name, which the
			// policy checks before it.
			if want.Spec.SchedulerName == name {
				if wrote := projection.Project(want, r, note); wrote != tc.want {
					t.Fatalf("projection.Project wrote %t, the case wants %t", wrote, tc.want)
				}
			}
			if err := sameProjection(want, got); err != nil {
				t.Error(err)
			}
		})
	}

	// A pod that a namespace label assigns gets the projection with its name, once the
	// apiserver has the assignment policy of this profile's name (its informer follows the
	// operator's write a moment later, as for the projection policy above).
	labelled := k.assignedNamespace(t, "project-assigned", schedulingv1alpha1.LabelAssignSchedulerName, name)
	want := withTerms(testutil.MakePod("assigned", labelled).SchedulerName(name).Obj(), ssd)
	projection.Project(want, r, note)
	testutil.Eventually(t, assignTimeout, "the assignment policy to project", func(ctx context.Context) error {
		assigned, err := dryRunPod(ctx, k.admin, withTerms(testutil.MakePod("assigned", labelled).Obj(), ssd))
		if err != nil {
			return err
		}
		if assigned.Spec.SchedulerName != name || assigned.Annotations[schedulingv1alpha1.AnnotationAssignment] != "assigned" {
			return fmt.Errorf("the labelled namespace's pod got scheduler %q, annotation %q; want %q, assigned",
				assigned.Spec.SchedulerName, assigned.Annotations[schedulingv1alpha1.AnnotationAssignment], name)
		}
		return sameProjection(want, assigned)
	})
	// The pod's decision and its projection are one patch: a pod with annotations of its own keeps
	// them, and one that opts out is assigned and not projected.
	for _, tc := range []struct {
		name string
		ann  map[string]string
		want bool
	}{
		{"with an annotation of its own", map[string]string{"team": "a"}, true},
		{"opted out", map[string]string{schedulingv1alpha1.AnnotationProjectNodeRestrictions: "false"}, false},
	} {
		t.Run("assigned, "+tc.name, func(t *testing.T) {
			mk := func() *corev1.Pod {
				p := testutil.MakePod("assigned", labelled).Obj()
				p.Annotations = maps.Clone(tc.ann)
				return p
			}
			got, err := dryRunPod(t.Context(), k.admin, mk())
			if err != nil {
				t.Fatal(err)
			}
			want := mk()
			want.Spec.SchedulerName = name
			if wrote := projection.Project(want, r, note); wrote != tc.want {
				t.Fatalf("projection.Project wrote %t, the case wants %t", wrote, tc.want)
			}
			if got.Spec.SchedulerName != name || got.Annotations[schedulingv1alpha1.AnnotationAssignment] != "assigned" {
				t.Errorf("scheduler %q, annotation %q; want %q, assigned", got.Spec.SchedulerName, got.Annotations[schedulingv1alpha1.AnnotationAssignment], name)
			}
			for k, v := range tc.ann {
				if got.Annotations[k] != v {
					t.Errorf("the pod's own annotation %s is %q, want %q", k, got.Annotations[k], v)
				}
			}
			if err := sameProjection(want, got); err != nil {
				t.Error(err)
			}
		})
	}

	// Turned off in the profile: nothing is written, and the scheduler does not roll.
	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.Projection.NodeRestrictions = schedulingv1alpha1.ProjectionDisabled
	})
	k.waitForProjection(t, "projection to stop", cases[1].pod, r, note, false)
}
