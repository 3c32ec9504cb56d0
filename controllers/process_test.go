package controllers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
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

// TestSchedulerProcessOfPlan: what manager render and simulate add around a Scheduler's profiles
// (plan.SchedulerProcess) is what the reconciler renders with before it reads any Secret, and the
// lease is named after the Deployment.
func TestSchedulerProcessOfPlan(t *testing.T) {
	s := testutil.MakeScheduler("shared").Obj()
	s.Spec.Extenders = []schedulingv1alpha1.Extender{{URLPrefix: "http://extender.example:8080", FilterVerb: ptr.To("filter")}}
	proc := sharedProcess(s)
	if diff := cmp.Diff(processSettings(proc, settings{namespace: "ops"}), plan.SchedulerProcess(s, "ops")); diff != "" {
		t.Errorf("plan.SchedulerProcess (-reconciler +plan):\n%s", diff)
	}
	if want := profile.LeasePrefix + proc.names.deployment(); proc.leaseName != want || plan.SchedulerDeployment(s) != proc.names.deployment() {
		t.Errorf("lease %q of Deployment %q (plan: %q), want %q", proc.leaseName, proc.names.deployment(), plan.SchedulerDeployment(s), want)
	}
}

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
	if got := proc.leaseOf(map[string]string{schedulingv1alpha1.AnnotationLease: "schedops-team-a"}); got != "schedops-team-a" {
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
	if proc.onLegacyLease {
		t.Error("keepLease changed the process it was given")
	}
	if !strings.Contains(string(legacy.YAML), "resourceName: binpack\n") {
		t.Errorf("the held configuration is not on the legacy lease:\n%s", legacy.YAML)
	}
	tmpl := typed[appsv1.Deployment](t, buildDeployment(held, testSettings, legacy)).Spec.Template
	if lease, ok := tmpl.Annotations[schedulingv1alpha1.AnnotationLease]; ok {
		t.Errorf("the held template names the lease %q", lease)
	}
	if got := held.leaseOf(tmpl.Annotations); got != "binpack" {
		t.Errorf("the held template runs on %q", got)
	}
	if tmpl.Annotations[schedulingv1alpha1.AnnotationConfigHash] != legacy.Hash {
		t.Errorf("the held template mounts the configuration %s, want %s", tmpl.Annotations[schedulingv1alpha1.AnnotationConfigHash], legacy.Hash)
	}

	same, sameCfg, err := upgradeStep{image: "v2"}.keepLease(proc, cfg)
	if err != nil || same != proc || sameCfg != cfg {
		t.Errorf("a step that keeps no lease changed the pass: %v", err)
	}
	tmpl = typed[appsv1.Deployment](t, buildDeployment(proc, testSettings, cfg)).Spec.Template
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
			ss.image = tc.image
			if tc.legacy {
				var err error
				if proc, cfg, err = (upgradeStep{legacyLease: true}).keepLease(proc, cfg); err != nil {
					t.Fatal(err)
				}
			}
			rollback := buildDeployment(proc, ss, cfg)
			markImageRollback(rollback, image)
			if got := rollback.Annotations[schedulingv1alpha1.AnnotationImageRolledBack] == image; got != tc.wantMark {
				t.Errorf("marked %v, want %v (annotations %v)", got, tc.wantMark, rollback.Annotations)
			}
		})
	}
}
