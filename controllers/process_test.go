package controllers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// allNames lists every name a process gives to an object or a lease, by what it names.
func allNames(proc *process) map[string]string {
	return map[string]string{
		"Deployment":                        proc.names.deployment(),
		"ServiceAccount":                    proc.names.serviceAccount(),
		"Service":                           proc.names.service(),
		"ConfigMap":                         proc.names.configMap("0123456789"),
		"lease Role":                        proc.names.leaseRole(),
		"lease":                             proc.leaseName,
		"ClusterRoleBinding kube-scheduler": proc.names.clusterRoleBinding("kube-scheduler"),
		"auth reader RoleBinding":           proc.names.authReaderBinding(),
	}
}

// TestDedicatedNamesUnchanged pins the names of a dedicated profile's objects: a change would
// make an upgrade create a second scheduler next to the first.
func TestDedicatedNamesUnchanged(t *testing.T) {
	want := map[string]string{
		"Deployment":                        "binpack-scheduler",
		"ServiceAccount":                    "binpack-scheduler",
		"Service":                           "metrics-binpack-scheduler",
		"ConfigMap":                         "binpack-config-0123456789",
		"lease Role":                        "binpack-scheduler-lease",
		"lease":                             "schedops-binpack",
		"ClusterRoleBinding kube-scheduler": "scheduler-profile-operator:binpack:kube-scheduler",
		"auth reader RoleBinding":           "scheduler-profile-operator:binpack:authentication-reader",
	}
	if diff := cmp.Diff(want, allNames(dedicated(testutil.MakeProfile("binpack").Obj()))); diff != "" {
		t.Errorf("dedicated names (-want +got):\n%s", diff)
	}
}

// TestSchedulerAndProfileNamesNeverCollide checks that a Scheduler's objects and lease can share
// no name with those of any profile, including the profile of the same name and profiles whose
// names end like the Scheduler's suffixes.
func TestSchedulerAndProfileNamesNeverCollide(t *testing.T) {
	profiles := []string{"batch", "batch-scheduler", "batch-config", "scheduler", "batch-scheduler-lease"}
	schedulers := []string{"batch", "batch-scheduler", "scheduler"}
	for _, s := range schedulers {
		shared := sharedProcess(testutil.MakeScheduler(s).Obj())
		for _, name := range profiles {
			for _, schedulerName := range []string{name, s, s + "-scheduler"} {
				p := testutil.MakeProfile(name).SchedulerName(schedulerName).Obj()
				for whatP, nameP := range allNames(dedicated(p)) {
					for whatS, nameS := range allNames(shared) {
						if nameP == nameS {
							t.Errorf("profile %s (%s) and Scheduler %s (%s) share the name %q", name, whatP, s, whatS, nameP)
						}
					}
				}
			}
		}
	}
}

// TestServiceNamesAreDNS1035Labels: a Service name must start with a letter, while a profile's
// or Scheduler's name may start with a digit and be 40 characters long.
func TestServiceNamesAreDNS1035Labels(t *testing.T) {
	long := strings.Repeat("9", 40)
	for _, proc := range []*process{
		dedicated(testutil.MakeProfile("1gpu").Obj()),
		dedicated(testutil.MakeProfile(long).Obj()),
		sharedProcess(testutil.MakeScheduler("1gpu").Obj()),
		sharedProcess(testutil.MakeScheduler(long).Obj()),
	} {
		if errs := validation.IsDNS1035Label(proc.names.service()); len(errs) > 0 {
			t.Errorf("Service name %q: %v", proc.names.service(), errs)
		}
	}
}

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
