package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestControllerRefusesAffinityAcrossNamespaces: a profile stored without the webhook whose
// scheduler pods' anti-affinity reaches every namespace is refused in status with the field path,
// and no scheduler Deployment is created for it.
func TestControllerRefusesAffinityAcrossNamespaces(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("affinity")
	k.createProfile(t, testutil.MakeProfile(name).SchedulerSettings(schedulingv1alpha1.SchedulerSettings{
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: "topology.kubernetes.io/zone", NamespaceSelector: &metav1.LabelSelector{},
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			}},
		}},
	}).Obj())
	p := k.waitForConditions(t, name, conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonInvalidConfig})
	want := "spec.scheduler.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector: Forbidden: the scheduler pods' affinity may only select pods of the operator's namespace"
	if msg := findCondition(p, schedulingv1alpha1.ConditionConfigValid).Message; !strings.Contains(msg, want) {
		t.Errorf("ConfigValid message %q does not contain %q", msg, want)
	}
	testutil.Consistently(t, 2*time.Second, "no scheduler for "+name, func(ctx context.Context) error {
		return k.deploymentAbsent(ctx, name+"-scheduler")
	})
}

// TestControllerRefusesPriorityClassNotAllowed: the operator runs with no allowed priority
// class (the default); a profile stored without the webhook that gives its scheduler pods one is
// refused in status with the field path, and no scheduler Deployment is created for it.
func TestControllerRefusesPriorityClassNotAllowed(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("priority")
	k.createProfile(t, testutil.MakeProfile(name).SchedulerSettings(schedulingv1alpha1.SchedulerSettings{
		PriorityClassName: ptr.To("system-node-critical"),
	}).Obj())
	p := k.waitForConditions(t, name, conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonInvalidConfig})
	want := `the scheduler would refuse this configuration, so it is not rolled out: spec.scheduler.priorityClassName: Forbidden: priority class "system-node-critical" is not allowed for scheduler pods; the operator allows none (--allowed-priority-classes, set by the cluster admin)`
	if msg := findCondition(p, schedulingv1alpha1.ConditionConfigValid).Message; msg != want {
		t.Errorf("ConfigValid message %q, want %q", msg, want)
	}
	testutil.Consistently(t, 2*time.Second, "no scheduler for "+name, func(ctx context.Context) error {
		return k.deploymentAbsent(ctx, name+"-scheduler")
	})
}
