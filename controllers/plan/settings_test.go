package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestAffinityErrors(t *testing.T) {
	term := func(namespaces []string, selector *metav1.LabelSelector) corev1.PodAffinityTerm {
		return corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", Namespaces: namespaces, NamespaceSelector: selector}
	}
	const why = "the scheduler pods' affinity may only select pods of the operator's namespace: leave it out"
	path := field.NewPath("spec", "scheduler", "affinity")
	cases := []struct {
		name     string
		affinity *corev1.Affinity
		want     []string
	}{
		{name: "none"},
		{name: "node affinity only", affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}},
		{name: "terms of the operator's namespace", affinity: &corev1.Affinity{
			PodAffinity:     &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nil, nil)}},
			PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term(nil, nil)}}},
		}},
		{name: "every namespace, and named ones", affinity: &corev1.Affinity{
			PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nil, nil), term([]string{"a"}, &metav1.LabelSelector{})}},
			PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
				{Weight: 1, PodAffinityTerm: term(nil, &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}})},
			}},
		}, want: []string{
			"spec.scheduler.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].namespaceSelector: Forbidden: " + why,
			"spec.scheduler.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].namespaces: Forbidden: " + why,
			"spec.scheduler.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.namespaceSelector: Forbidden: " + why,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, err := range affinityErrors(tc.affinity, path) {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPriorityClassErrors(t *testing.T) {
	path := field.NewPath("spec", "scheduler", "priorityClassName")
	cases := []struct {
		name    string
		class   *string
		allowed []string
		want    []string
	}{
		{name: "none set", allowed: nil},
		{name: "empty", class: ptr.To(""), allowed: nil},
		{name: "allowed", class: ptr.To("system-cluster-critical"), allowed: []string{"schedulers", "system-cluster-critical"}},
		{name: "none allowed", class: ptr.To("system-cluster-critical"), want: []string{
			`spec.scheduler.priorityClassName: Forbidden: priority class "system-cluster-critical" is not allowed for scheduler pods; the operator allows none (--allowed-priority-classes, set by the cluster admin)`,
		}},
		{name: "not in the list", class: ptr.To("system-node-critical"), allowed: []string{"system-cluster-critical", "schedulers"}, want: []string{
			`spec.scheduler.priorityClassName: Forbidden: priority class "system-node-critical" is not allowed for scheduler pods; the operator allows "system-cluster-critical", "schedulers" (--allowed-priority-classes, set by the cluster admin)`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, err := range priorityClassErrors(tc.class, tc.allowed, path) {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
