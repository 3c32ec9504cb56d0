package controllers

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// TestLeaseNames: every lease carries the prefix and is a valid object name at the longest
// names the API admits (a 63-character scheduler name, a 40-character Scheduler name).
func TestLeaseNames(t *testing.T) {
	for _, proc := range []*process{
		dedicated(testutil.MakeProfile("binpack").Obj()),
		dedicated(testutil.MakeProfile("p").SchedulerName(strings.Repeat("a", 63)).Obj()),
		sharedProcess(testutil.MakeScheduler(strings.Repeat("b", 40)).Obj()),
	} {
		if !strings.HasPrefix(proc.leaseName, profile.LeasePrefix) {
			t.Errorf("lease %q has no prefix %q", proc.leaseName, profile.LeasePrefix)
		}
		if errs := validation.IsDNS1123Subdomain(proc.leaseName); len(errs) > 0 {
			t.Errorf("lease %q: %v", proc.leaseName, errs)
		}
	}
}

func TestOneLeaderStrategy(t *testing.T) {
	p := testutil.MakeProfile("binpack").Obj()
	onLease := func(lease string) map[string]string {
		if lease == "" {
			return map[string]string{AnnotationRevision: "old"}
		}
		return map[string]string{AnnotationRevision: "old", AnnotationLease: lease}
	}
	live := func(lease string, strategy appsv1.DeploymentStrategyType, updated int32) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
		d.Spec.Replicas = ptr.To[int32](2)
		d.Spec.Strategy.Type = strategy
		d.Spec.Template.Annotations = onLease(lease)
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: updated}
		return d
	}
	cases := []struct {
		name string
		live *appsv1.Deployment
		want appsv1.DeploymentStrategyType
	}{
		{name: "first apply", want: appsv1.RollingUpdateDeploymentStrategyType},
		{name: "same lease", live: live("schedops-binpack", appsv1.RollingUpdateDeploymentStrategyType, 2), want: appsv1.RollingUpdateDeploymentStrategyType},
		{name: "upgrade from the legacy lease", live: live("", appsv1.RollingUpdateDeploymentStrategyType, 2), want: appsv1.RecreateDeploymentStrategyType},
		{name: "another lease", live: live("binpack", appsv1.RollingUpdateDeploymentStrategyType, 2), want: appsv1.RecreateDeploymentStrategyType},
		{name: "recreate not done", live: live("schedops-binpack", appsv1.RecreateDeploymentStrategyType, 0), want: appsv1.RecreateDeploymentStrategyType},
		{name: "recreate done", live: live("schedops-binpack", appsv1.RecreateDeploymentStrategyType, 2), want: appsv1.RollingUpdateDeploymentStrategyType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			proc := dedicated(p)
			desired := buildDeployment(proc, testSettings, testConfig(t, p))
			oneLeaderStrategy(proc, desired, tc.live)
			if got := *desired.Spec.Strategy.Type; got != tc.want {
				t.Errorf("strategy %s, want %s", got, tc.want)
			}
			if tc.want == appsv1.RecreateDeploymentStrategyType && desired.Spec.Strategy.RollingUpdate != nil {
				t.Errorf("a Recreate strategy with rollingUpdate %+v: the apiserver refuses it", desired.Spec.Strategy.RollingUpdate)
			}
		})
	}
}

// TestLegacyTemplateLease: a template of an operator before the prefix carries no lease
// annotation and runs on the scheduler name.
func TestLegacyTemplateLease(t *testing.T) {
	proc := dedicated(testutil.MakeProfile("p").SchedulerName("team-a").Obj())
	if got := proc.leaseOf(corev1.PodTemplateSpec{}.Annotations); got != "team-a" {
		t.Errorf("legacy lease %q, want team-a", got)
	}
	if got := proc.leaseOf(map[string]string{AnnotationLease: "schedops-team-a"}); got != "schedops-team-a" {
		t.Errorf("lease %q", got)
	}
}
