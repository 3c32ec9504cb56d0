package plan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

func dedicated(p *schedulingv1alpha1.SchedulerProfile) *Process {
	return DedicatedProcess(p, profile.SchedulerName(p))
}

// allNames lists every name a process gives to an object or a lease, by what it names.
func allNames(proc *Process) map[string]string {
	return map[string]string{
		"Deployment":                        proc.Names.Deployment(),
		"ServiceAccount":                    proc.Names.ServiceAccount(),
		"Service":                           proc.Names.Service(),
		"ConfigMap":                         proc.Names.ConfigMap("0123456789"),
		"lease Role":                        proc.Names.LeaseRole(),
		"lease":                             proc.LeaseName,
		"ClusterRoleBinding kube-scheduler": proc.Names.ClusterRoleBinding("kube-scheduler"),
		"auth reader RoleBinding":           proc.Names.AuthReaderBinding(),
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
		shared := SharedProcess(testutil.MakeScheduler(s).Obj())
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
	for _, proc := range []*Process{
		dedicated(testutil.MakeProfile("1gpu").Obj()),
		dedicated(testutil.MakeProfile(long).Obj()),
		SharedProcess(testutil.MakeScheduler("1gpu").Obj()),
		SharedProcess(testutil.MakeScheduler(long).Obj()),
	} {
		if errs := validation.IsDNS1035Label(proc.Names.Service()); len(errs) > 0 {
			t.Errorf("Service name %q: %v", proc.Names.Service(), errs)
		}
	}
}

// TestSchedulerProcessOfPlan: what manager render and simulate add around a Scheduler's profiles
// (SchedulerProcess) is what the reconciler renders with before it reads any Secret, and the
// lease is named after the Deployment.
func TestSchedulerProcessOfPlan(t *testing.T) {
	s := testutil.MakeScheduler("shared").Obj()
	s.Spec.Extenders = []schedulingv1alpha1.Extender{{URLPrefix: "http://extender.example:8080", FilterVerb: ptr.To("filter")}}
	proc := SharedProcess(s)
	if diff := cmp.Diff(proc.ConfigProcess(Settings{Namespace: "ops"}), SchedulerProcess(s, "ops")); diff != "" {
		t.Errorf("SchedulerProcess (-reconciler +plan):\n%s", diff)
	}
	if want := profile.LeasePrefix + proc.Names.Deployment(); proc.LeaseName != want || SchedulerDeployment(s) != proc.Names.Deployment() {
		t.Errorf("lease %q of Deployment %q (plan: %q), want %q", proc.LeaseName, proc.Names.Deployment(), SchedulerDeployment(s), want)
	}
}

// TestLeaseNames: every lease carries the prefix and is a valid object name at the longest
// names the API admits (a 63-character scheduler name, a 40-character Scheduler name).
func TestLeaseNames(t *testing.T) {
	for _, proc := range []*Process{
		dedicated(testutil.MakeProfile("binpack").Obj()),
		dedicated(testutil.MakeProfile("p").SchedulerName(strings.Repeat("a", 63)).Obj()),
		SharedProcess(testutil.MakeScheduler(strings.Repeat("b", 40)).Obj()),
	} {
		if !strings.HasPrefix(proc.LeaseName, profile.LeasePrefix) {
			t.Errorf("lease %q has no prefix %q", proc.LeaseName, profile.LeasePrefix)
		}
		if errs := validation.IsDNS1123Subdomain(proc.LeaseName); len(errs) > 0 {
			t.Errorf("lease %q: %v", proc.LeaseName, errs)
		}
	}
}

// TestLegacyTemplateLease: a template of an operator before the prefix carries no lease
// annotation and runs on the scheduler name.
func TestLegacyTemplateLease(t *testing.T) {
	p := testutil.MakeProfile("p").SchedulerName("team-a").Obj()
	proc := DedicatedProcess(p, profile.SchedulerName(p))
	if got := proc.LeaseOf(corev1.PodTemplateSpec{}.Annotations); got != "team-a" {
		t.Errorf("legacy lease %q, want team-a", got)
	}
	if got := proc.LeaseOf(map[string]string{schedulingv1alpha1.AnnotationLease: "schedops-team-a"}); got != "schedops-team-a" {
		t.Errorf("lease %q", got)
	}
}
