package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestGatesNeedTheirAPI: envtest's apiserver does not serve scheduling.k8s.io/v1beta1, so a
// profile or a Scheduler with GenericWorkload on is refused with RequiredAPIUnavailable, naming
// the API and the flags that serve it, and no scheduler is rolled out; so is one with
// CompositePodGroup (scheduling.k8s.io/v1alpha3). A default 1.37 scheduler's APIs are served: the
// other profiles of the suite roll out. Gates that the scheduler
// would refuse are reported at their field path.
func TestGatesNeedTheirAPI(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, cfg)
	gang := map[string]bool{"GenericWorkload": true}

	name := uniqueName("gang")
	k.createProfile(t, testutil.MakeProfile(name).SchedulerSettings(schedulingv1alpha1.SchedulerSettings{FeatureGates: gang}).Obj())
	p := k.waitForConditions(t, name, conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonRequiredAPIUnavailable})
	msg := findCondition(p, schedulingv1alpha1.ConditionConfigValid).Message
	for _, want := range []string{"scheduling.k8s.io/v1beta1 podgroups", "--runtime-config=scheduling.k8s.io/v1beta1=true"} {
		if !strings.Contains(msg, want) {
			t.Errorf("ConfigValid message %q does not contain %q", msg, want)
		}
	}
	testutil.Consistently(t, 2*time.Second, "no Deployment for "+name, func(ctx context.Context) error {
		return k.deploymentAbsent(ctx, name+"-scheduler")
	})

	// Another gate of the table (profile.GateAPIs), whose alpha API envtest does not serve either.
	composite := uniqueName("composite")
	k.createProfile(t, testutil.MakeProfile(composite).SchedulerSettings(schedulingv1alpha1.SchedulerSettings{FeatureGates: map[string]bool{
		"GenericWorkload": true, "TopologyAwareWorkloadScheduling": true, "CompositePodGroup": true,
	}}).Obj())
	p = k.waitForConditions(t, composite, conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonRequiredAPIUnavailable})
	const compositeMsg = "feature gate CompositePodGroup needs the API scheduling.k8s.io/v1alpha3 compositepodgroups, which the cluster does not serve"
	if msg := findCondition(p, schedulingv1alpha1.ConditionConfigValid).Message; !strings.Contains(msg, compositeMsg) {
		t.Errorf("ConfigValid message %q does not contain %q", msg, compositeMsg)
	}
	if err := k.deploymentAbsent(t.Context(), composite+"-scheduler"); err != nil {
		t.Error(err)
	}

	sched := uniqueName("gangs")
	s := testutil.MakeScheduler(sched).Obj()
	s.Spec.FeatureGates = gang
	k.createScheduler(t, s)
	k.createProfile(t, testutil.MakeProfile(sched+"-m").SchedulerRef(sched).Obj())
	k.waitForDegradedScheduler(t, sched, schedulingv1alpha1.ReasonRequiredAPIUnavailable, "scheduling.k8s.io/v1beta1 podgroups")
	if err := k.deploymentAbsent(t.Context(), sched+".scheduler"); err != nil {
		t.Error(err)
	}
	// Its member says why it is not served.
	k.waitForConditions(t, sched+"-m", conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonRequiredAPIUnavailable})

	// A Scheduler's refused gate is the Scheduler's: it is reported on the Scheduler at its field,
	// and on its member as the Scheduler's.
	badSched := uniqueName("badgates")
	bs := testutil.MakeScheduler(badSched).Obj()
	bs.Spec.FeatureGates = map[string]bool{"NoSuchGate": true}
	k.createScheduler(t, bs)
	k.createProfile(t, testutil.MakeProfile(badSched+"-m").SchedulerRef(badSched).Obj())
	const refusedGate = "spec.featureGates.NoSuchGate: Invalid value: true: unrecognized feature gate: NoSuchGate"
	k.waitForDegradedScheduler(t, badSched, schedulingv1alpha1.ReasonInvalidConfigNotRolledOut, refusedGate)
	p = k.waitForConditions(t, badSched+"-m", conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonInvalidConfig})
	if msg := findCondition(p, schedulingv1alpha1.ConditionConfigValid).Message; !strings.Contains(msg, "Scheduler "+badSched+": "+refusedGate) {
		t.Errorf("the member's ConfigValid message %q does not name the Scheduler's gate", msg)
	}

	bad := uniqueName("badgate")
	k.createProfile(t, testutil.MakeProfile(bad).SchedulerSettings(schedulingv1alpha1.SchedulerSettings{FeatureGates: map[string]bool{"NoSuchGate": true}}).Obj())
	p = k.waitForConditions(t, bad, conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonInvalidConfig})
	if msg := findCondition(p, schedulingv1alpha1.ConditionConfigValid).Message; !strings.Contains(msg, "spec.scheduler.featureGates.NoSuchGate: Invalid value: true: unrecognized feature gate: NoSuchGate") {
		t.Errorf("ConfigValid message %q", msg)
	}
}
