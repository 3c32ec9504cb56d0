package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

func TestCapErrors(t *testing.T) {
	path := field.NewPath("spec", "scheduler")
	resources := func(requests, limits corev1.ResourceList) schedulingv1alpha1.SchedulerSettings {
		return schedulingv1alpha1.SchedulerSettings{Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
	}
	list := func(cpu, memory string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if memory != "" {
			l[corev1.ResourceMemory] = resource.MustParse(memory)
		}
		return l
	}
	tolerations := func(ts ...corev1.Toleration) schedulingv1alpha1.SchedulerSettings {
		return schedulingv1alpha1.SchedulerSettings{Tolerations: ts}
	}
	const allowsCPU = "the operator allows at most 4 (--max-scheduler-cpu, set by the cluster admin)"
	const allowsMemory = "the operator allows at most 8Gi (--max-scheduler-memory, set by the cluster admin)"
	const everyTaint = "Forbidden: a toleration without a key and with operator Exists tolerates every taint, and would put the scheduler pods on any node; name the taint's key (the operator allows it only with --allow-tolerate-all-taints, set by the cluster admin)"
	cases := []struct {
		name string
		run  schedulingv1alpha1.SchedulerSettings
		caps SchedulerPodCaps
		want []string
	}{
		{name: "nothing set"},
		{name: "at the default caps", run: resources(list("4", "8Gi"), list("4000m", "8192Mi"))},
		// On main before the allow-list, both were accepted: a GPU or ephemeral storage for the
		// scheduler pods, in the operator's namespace, outside every team's quota.
		{name: "other resources are refused", run: resources(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}, corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"), "hugepages-2Mi": resource.MustParse("1Gi")}), want: []string{
			"spec.scheduler.resources.requests[nvidia.com/gpu]: Forbidden: scheduler pods may not have a nvidia.com/gpu request: the operator allows cpu and memory only (--allowed-scheduler-resources, set by the cluster admin)",
			"spec.scheduler.resources.limits[ephemeral-storage]: Forbidden: scheduler pods may not have a ephemeral-storage limit: the operator allows cpu and memory only (--allowed-scheduler-resources, set by the cluster admin)",
			"spec.scheduler.resources.limits[hugepages-2Mi]: Forbidden: scheduler pods may not have a hugepages-2Mi limit: the operator allows cpu and memory only (--allowed-scheduler-resources, set by the cluster admin)",
		}},
		{name: "resources the admin allowed", run: resources(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}, corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"), "hugepages-2Mi": resource.MustParse("1Gi")}),
			caps: SchedulerPodCaps{AllowedResources: []corev1.ResourceName{corev1.ResourceEphemeralStorage, "nvidia.com/gpu"}}, want: []string{
				"spec.scheduler.resources.limits[hugepages-2Mi]: Forbidden: scheduler pods may not have a hugepages-2Mi limit: the operator allows cpu and memory, and ephemeral-storage, nvidia.com/gpu (--allowed-scheduler-resources, set by the cluster admin)",
			}},
		{name: "past the default caps", run: resources(list("4001m", "16Gi"), list("8", "9Gi")), want: []string{
			"spec.scheduler.resources.requests[cpu]: Forbidden: a cpu request of 4001m is more than scheduler pods may have; " + allowsCPU,
			"spec.scheduler.resources.requests[memory]: Forbidden: a memory request of 16Gi is more than scheduler pods may have; " + allowsMemory,
			"spec.scheduler.resources.limits[cpu]: Forbidden: a cpu limit of 8 is more than scheduler pods may have; " + allowsCPU,
			"spec.scheduler.resources.limits[memory]: Forbidden: a memory limit of 9Gi is more than scheduler pods may have; " + allowsMemory,
		}},
		{name: "a limit alone", run: resources(nil, list("", "9Gi")), want: []string{
			"spec.scheduler.resources.limits[memory]: Forbidden: a memory limit of 9Gi is more than scheduler pods may have; " + allowsMemory,
		}},
		{name: "the admin's caps", run: resources(list("500m", "1Gi"), list("16", "32Gi")),
			caps: SchedulerPodCaps{MaxCPU: resource.MustParse("16"), MaxMemory: resource.MustParse("512Mi")}, want: []string{
				"spec.scheduler.resources.requests[memory]: Forbidden: a memory request of 1Gi is more than scheduler pods may have; the operator allows at most 512Mi (--max-scheduler-memory, set by the cluster admin)",
				"spec.scheduler.resources.limits[memory]: Forbidden: a memory limit of 32Gi is more than scheduler pods may have; the operator allows at most 512Mi (--max-scheduler-memory, set by the cluster admin)",
			}},
		{name: "tolerations of named taints", run: tolerations(
			corev1.Toleration{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			corev1.Toleration{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "schedulers"})},
		{name: "a toleration of every taint", run: tolerations(
			corev1.Toleration{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "schedulers"},
			corev1.Toleration{Operator: corev1.TolerationOpExists},
			corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}), want: []string{
			"spec.scheduler.tolerations[1]: " + everyTaint,
			"spec.scheduler.tolerations[2]: " + everyTaint,
		}},
		{name: "a toleration of every taint, allowed", run: tolerations(corev1.Toleration{Operator: corev1.TolerationOpExists}),
			caps: SchedulerPodCaps{AllowTolerateAllTaints: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, err := range capErrors(tc.run, tc.caps, path) {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCapsRefuseSettings: the caps are part of the owner's settings that the webhook and the
// reconcilers refuse alike, at a profile's spec.scheduler and at a Scheduler's spec.
func TestCapsRefuseSettings(t *testing.T) {
	run := schedulingv1alpha1.SchedulerSettings{
		Resources:   corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5")}},
		Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
	}
	p := testutil.MakeProfile("p").SchedulerSettings(run).Obj()
	s := testutil.MakeScheduler("s").Obj()
	s.Spec.SchedulerSettings = run
	fields := func(errs field.ErrorList) []string {
		var out []string
		for _, err := range errs {
			out = append(out, err.Field)
		}
		return out
	}
	caps := SchedulerPodCaps{}
	if diff := cmp.Diff([]string{"spec.scheduler.resources.limits[cpu]", "spec.scheduler.tolerations[0]"}, fields(ProfileSettingsErrors(p, nil, caps))); diff != "" {
		t.Errorf("profile (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"spec.resources.limits[cpu]", "spec.tolerations[0]"}, fields(SchedulerSettingsErrors(s, nil, caps))); diff != "" {
		t.Errorf("Scheduler (-want +got):\n%s", diff)
	}
	caps = SchedulerPodCaps{MaxCPU: resource.MustParse("8"), AllowTolerateAllTaints: true}
	if errs := ProfileSettingsErrors(p, nil, caps); len(errs) > 0 {
		t.Errorf("profile within the admin's caps: %v", errs)
	}
}

func TestSchedulerPodCapsValidate(t *testing.T) {
	cases := []struct {
		name    string
		caps    SchedulerPodCaps
		wantErr string
	}{
		{name: "defaults"},
		{name: "at the default requests", caps: SchedulerPodCaps{MaxCPU: resource.MustParse("100m"), MaxMemory: resource.MustParse("128Mi")}},
		{name: "below the default CPU request", caps: SchedulerPodCaps{MaxCPU: resource.MustParse("50m")},
			wantErr: "--max-scheduler-cpu must be at least 100m, the cpu request of a scheduler whose owner sets none, not 50m"},
		{name: "negative memory", caps: SchedulerPodCaps{MaxMemory: resource.MustParse("-1")},
			wantErr: "--max-scheduler-memory must be at least 128Mi, the memory request of a scheduler whose owner sets none, not -1"},
		{name: "allowed resources", caps: SchedulerPodCaps{AllowedResources: []corev1.ResourceName{"nvidia.com/gpu", "hugepages-2Mi"}}},
		{name: "an allowed resource that is no name", caps: SchedulerPodCaps{AllowedResources: []corev1.ResourceName{"nvidia.com/gpu", "a b"}},
			wantErr: `--allowed-scheduler-resources: "a b" is not a resource name: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.caps.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("Validate() = %q, want %q", got, tc.wantErr)
			}
		})
	}
}
