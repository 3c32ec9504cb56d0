package webhook

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestSchedulerPodAffinityStaysInItsNamespace: the webhook refuses scheduler pods whose
// (anti-)affinity reaches pods of other namespaces, on a profile and on a Scheduler, with the
// field path; a term of the operator's namespace only is admitted.
func TestSchedulerPodAffinityStaysInItsNamespace(t *testing.T) {
	ctx := t.Context()
	zone := func(term corev1.PodAffinityTerm) corev1.PodAffinityTerm {
		term.TopologyKey = "topology.kubernetes.io/zone"
		term.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
		return term
	}
	everywhere := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{zone(corev1.PodAffinityTerm{NamespaceSelector: &metav1.LabelSelector{}})},
	}}
	profile := testutil.MakeProfile("affinity-everywhere").SchedulerSettings(schedulingv1alpha1.SchedulerSettings{Affinity: everywhere}).Obj()
	want := []string{"spec.scheduler.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector: Forbidden: the scheduler pods' affinity may only select pods of the operator's namespace: leave it out"}
	if diff := cmp.Diff(want, testutil.InvalidCauses(t, k8sClient.Create(ctx, profile))); diff != "" {
		t.Errorf("The refusal of a profile (-want +got):\n%s", diff)
	}

	s := testutil.MakeScheduler("affinity-other-namespaces").Obj()
	s.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: zone(corev1.PodAffinityTerm{Namespaces: []string{"team-a"}})}},
	}}
	want = []string{"spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.namespaces: Forbidden: the scheduler pods' affinity may only select pods of the operator's namespace: leave it out"}
	if diff := cmp.Diff(want, testutil.InvalidCauses(t, k8sClient.Create(ctx, s))); diff != "" {
		t.Errorf("The refusal of a Scheduler (-want +got):\n%s", diff)
	}

	own := testutil.MakeProfile("affinity-own-namespace").SchedulerSettings(schedulingv1alpha1.SchedulerSettings{
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{zone(corev1.PodAffinityTerm{})},
		}},
	}).Obj()
	if err := k8sClient.Create(ctx, own); err != nil {
		t.Fatalf("A term of the operator's namespace only was refused: %v", err)
	}
	t.Cleanup(func() {
		_ = k8sClient.Delete(context.Background(), own, client.PropagationPolicy(metav1.DeletePropagationBackground))
	})
}
