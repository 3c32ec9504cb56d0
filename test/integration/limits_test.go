package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// TestSchedulerMemberTooLarge: a member whose entry would push its Scheduler's configuration
// past controllers.MaxConfigBytes (12,000 NodeLabelPreference preferences) is refused alone with
// ConfigTooLarge and the size, while the other member's change rolls out.
func TestSchedulerMemberTooLarge(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, cfg)
	sched := uniqueName("sized")
	small, big := sched+"-small", sched+"-big"
	k.createScheduler(t, testutil.MakeScheduler(sched).Obj())
	k.createProfile(t, testutil.MakeProfile(small).SchedulerRef(sched).PluginConfig("NodeResourcesFit", mostAllocated).Obj())
	s := k.waitForScheduler(t, sched, "to serve "+small, servesProfiles(small))
	k.markDeploymentAvailable(t, s.Status.DeploymentName)

	var prefs []string
	for i := range 12000 {
		prefs = append(prefs, fmt.Sprintf(`{"key": "example.com/label-%05d-abcdefghijklmnopqrstuvwxyz", "values": ["value-%05d-abcdefghij"]}`, i, i))
	}
	k.createProfile(t, testutil.MakeProfile(big).SchedulerRef(sched).
		PluginConfig("NodeLabelPreference", `{"preferences": [`+strings.Join(prefs, ",")+`]}`).Obj())
	// The big member's pass renders and decodes a configuration of about 1 MiB, more than once:
	// 10-35 s on a loaded 2-core machine.
	p := k.waitForConditionsWithin(t, 3*reconcileTimeout, big, conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonConfigTooLarge})
	wantMsg := fmt.Sprintf("with this profile the configuration of Scheduler %s would be ", sched)
	if msg := findCondition(p, schedulingv1alpha1.ConditionConfigValid).Message; !strings.Contains(msg, wantMsg) || !strings.Contains(msg, fmt.Sprintf("more than the %d a ConfigMap can hold", controllers.MaxConfigBytes)) {
		t.Errorf("ConfigValid message %q, want the size and the limit", msg)
	}

	k.updateProfile(t, small, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.PluginConfig[0].Args = runtime.RawExtension{Raw: []byte(leastAllocated)}
	})
	changed := k.waitForScheduler(t, sched, "to roll the small member's change", func(got *schedulingv1alpha1.Scheduler) error {
		if got.Status.ConfigHash == s.Status.ConfigHash {
			return fmt.Errorf("still %s", got.Status.ConfigHash)
		}
		return servesProfiles(small)(got)
	})
	entries, _ := k.configEntries(t, changed.Status.ConfigMapName)
	if !strings.Contains(entries[small], "LeastAllocated") || len(entries) != 1 {
		t.Errorf("the configuration's entries %v, want the small member's change alone", entries)
	}
	k.markDeploymentAvailable(t, changed.Status.DeploymentName)
	k.waitForConditions(t, small, configValid, available)
	k.waitForConditionsWithin(t, 3*reconcileTimeout, big, conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonConfigTooLarge})
}

// TestSchedulerAtTheMemberLimit: with a member limit of 2 (the test hook
// ManagerOptions.MaxMembersPerScheduler), the third member is refused alone with TooManyMembers
// and is not Available (NotServed), and the first two stay served; once one leaves, the third is
// served and Available. On main before members' availability was their own, the third member
// copied the Scheduler's Available=True although nothing served it.
func TestSchedulerAtTheMemberLimit(t *testing.T) {
	k := suiteCluster()
	k.ensureOperatorNamespace(t)
	opts := operatorOptions
	opts.MaxMembersPerScheduler = 2
	framework.StartOperator(t, k.cfg, opts)
	sched := uniqueName("full")
	first, second, third := sched+"-a", sched+"-b", sched+"-c"
	k.createScheduler(t, testutil.MakeScheduler(sched).Obj())
	for _, name := range []string{first, second} {
		k.createProfile(t, testutil.MakeProfile(name).SchedulerRef(sched).Obj())
	}
	s := k.waitForScheduler(t, sched, "to serve two members", servesProfiles(first, second))
	k.markDeploymentAvailable(t, s.Status.DeploymentName)

	k.createProfile(t, testutil.MakeProfile(third).SchedulerRef(sched).Obj())
	p := k.waitForConditions(t, third, conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonTooManyMembers},
		conditionWant{schedulingv1alpha1.ConditionAvailable, metav1.ConditionFalse, schedulingv1alpha1.ReasonNotServed})
	want := fmt.Sprintf("Scheduler %s serves its maximum of 2 profiles; this one is not served until another leaves", sched)
	if msg := findCondition(p, schedulingv1alpha1.ConditionConfigValid).Message; msg != want {
		t.Errorf("ConfigValid message %q, want %q", msg, want)
	}
	for _, name := range []string{first, second} {
		k.waitForConditions(t, name, configValid, available)
	}
	testutil.Consistently(t, 2*time.Second, "the Scheduler to serve its first two members", func(ctx context.Context) error {
		got, err := k.getScheduler(ctx, sched)
		if err != nil {
			return err
		}
		return servesProfiles(first, second)(got)
	})

	k.deleteProfileAndObjects(t, first)
	s = k.waitForScheduler(t, sched, "to serve the third member once the first left", servesProfiles(second, third))
	k.waitForConditions(t, third, conditionWant{schedulingv1alpha1.ConditionAvailable, metav1.ConditionFalse, schedulingv1alpha1.ReasonNotServed})
	k.markDeploymentAvailable(t, s.Status.DeploymentName)
	k.waitForConditions(t, third, configValid, available)
}
