package core

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/deploy"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

func TestOneLeaderStrategy(t *testing.T) {
	p := testutil.MakeProfile("binpack").Obj()
	onLease := func(lease string) map[string]string {
		if lease == "" {
			return map[string]string{schedulingv1alpha1.AnnotationRevision: "old"}
		}
		return map[string]string{schedulingv1alpha1.AnnotationRevision: "old", schedulingv1alpha1.AnnotationLease: lease}
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
			desired := deploy.Deployment(proc, testSettings, testConfig(t, p))
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
	if got := proc.LeaseOf(corev1.PodTemplateSpec{}.Annotations); got != "team-a" {
		t.Errorf("legacy lease %q, want team-a", got)
	}
	if got := proc.LeaseOf(map[string]string{schedulingv1alpha1.AnnotationLease: "schedops-team-a"}); got != "schedops-team-a" {
		t.Errorf("lease %q", got)
	}
}

// TestKeepLease: a scheduler the upgrade wave holds on the lease of an operator before the prefix
// keeps a template with no lease annotation and a configuration on that lease; its turn, or a
// scheduler already on the prefix, builds the template as always.
func TestKeepLease(t *testing.T) {
	p := testutil.MakeProfile("binpack").Obj()
	proc, cfg := dedicated(p), testConfig(t, p)
	held, legacy, err := upgradeStep{image: "v1", legacyLease: true}.keepLease(proc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if proc.OnLegacyLease {
		t.Error("keepLease changed the process it was given")
	}
	if !strings.Contains(string(legacy.YAML), "resourceName: binpack\n") {
		t.Errorf("the held configuration is not on the legacy lease:\n%s", legacy.YAML)
	}
	tmpl := testutil.Typed[appsv1.Deployment](t, deploy.Deployment(held, testSettings, legacy)).Spec.Template
	if lease, ok := tmpl.Annotations[schedulingv1alpha1.AnnotationLease]; ok {
		t.Errorf("the held template names the lease %q", lease)
	}
	if got := held.LeaseOf(tmpl.Annotations); got != "binpack" {
		t.Errorf("the held template runs on %q", got)
	}
	if tmpl.Annotations[schedulingv1alpha1.AnnotationConfigHash] != legacy.Hash {
		t.Errorf("the held template mounts the configuration %s, want %s", tmpl.Annotations[schedulingv1alpha1.AnnotationConfigHash], legacy.Hash)
	}

	same, sameCfg, err := upgradeStep{image: "v2"}.keepLease(proc, cfg)
	if err != nil || same != proc || sameCfg != cfg {
		t.Errorf("a step that keeps no lease changed the pass: %v", err)
	}
	tmpl = testutil.Typed[appsv1.Deployment](t, deploy.Deployment(proc, testSettings, cfg)).Spec.Template
	if got := tmpl.Annotations[schedulingv1alpha1.AnnotationLease]; got != "schedops-binpack" {
		t.Errorf("the template names the lease %q", got)
	}
}

// TestRollbackToTheLegacyLeaseStopsTheWave: a rollback that returns to a template of an operator
// before the prefix is marked even with the same image, as one that returns to another image.
func TestRollbackToTheLegacyLeaseStopsTheWave(t *testing.T) {
	p := testutil.MakeProfile("binpack").Obj()
	const image = "example.com/spo:v2"
	for _, tc := range []struct {
		name     string
		legacy   bool
		image    string
		wantMark bool
	}{
		{name: "same image, prefixed lease", image: image},
		{name: "same image, legacy lease", legacy: true, image: image, wantMark: true},
		{name: "older image", image: "example.com/spo:v1", wantMark: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc, cfg := dedicated(p), testConfig(t, p)
			ss := testSettings
			ss.Image = tc.image
			if tc.legacy {
				var err error
				if proc, cfg, err = (upgradeStep{legacyLease: true}).keepLease(proc, cfg); err != nil {
					t.Fatal(err)
				}
			}
			rollback := deploy.Deployment(proc, ss, cfg)
			markImageRollback(rollback, image)
			if got := rollback.Annotations[schedulingv1alpha1.AnnotationImageRolledBack] == image; got != tc.wantMark {
				t.Errorf("marked %v, want %v (annotations %v)", got, tc.wantMark, rollback.Annotations)
			}
		})
	}
}
