package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// conditionWant is the expected state of one status condition.
type conditionWant struct {
	typ    string
	status metav1.ConditionStatus
	reason string
}

func (c conditionWant) String() string { return fmt.Sprintf("%s=%s (%s)", c.typ, c.status, c.reason) }

// Conditions the tests wait for.
var (
	configValid = conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, schedulingv1alpha1.ReasonConfigAccepted}
	available   = conditionWant{schedulingv1alpha1.ConditionAvailable, metav1.ConditionTrue, schedulingv1alpha1.ReasonMinimumReplicasAvailable}
	rolledOut   = conditionWant{schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonRolloutComplete}
	rollingOut  = conditionWant{schedulingv1alpha1.ConditionProgressing, metav1.ConditionTrue, schedulingv1alpha1.ReasonRollingOut}
	notDegraded = conditionWant{schedulingv1alpha1.ConditionDegraded, metav1.ConditionFalse, schedulingv1alpha1.ReasonAsExpected}
)

// waitForConditions waits until the profile's conditions describe its current generation and
// match want, and returns the profile as it was then.
func (k *cluster) waitForConditions(t *testing.T, name string, want ...conditionWant) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	return k.waitForConditionsWithin(t, reconcileTimeout, name, want...)
}

// waitForConditionsWithin is waitForConditions with its own timeout, for a pass that is slow by
// design (a configuration near the size limit).
func (k *cluster) waitForConditionsWithin(t *testing.T, timeout time.Duration, name string, want ...conditionWant) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	var got *schedulingv1alpha1.SchedulerProfile
	testutil.Eventually(t, timeout, fmt.Sprintf("SchedulerProfile %s to have %v", name, want), func(ctx context.Context) error {
		p, err := k.getProfile(ctx, name)
		if err != nil {
			return err
		}
		for _, w := range want {
			c := meta.FindStatusCondition(p.Status.Conditions, w.typ)
			switch {
			case c == nil:
				return fmt.Errorf("no %s condition (conditions: %s)", w.typ, formatConditions(p))
			case c.ObservedGeneration != p.Generation:
				return fmt.Errorf("%s describes generation %d, not %d", w.typ, c.ObservedGeneration, p.Generation)
			case c.Status != w.status || c.Reason != w.reason:
				return fmt.Errorf("%s is %s (%s): %s", w.typ, c.Status, c.Reason, c.Message)
			}
		}
		got = p
		return nil
	})
	return got
}

// waitForRollout waits until the profile's status reports a valid, applied configuration of its
// current generation, and returns the profile.
func (k *cluster) waitForRollout(t *testing.T, name string) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	k.waitForConditions(t, name, configValid)
	var got *schedulingv1alpha1.SchedulerProfile
	testutil.Eventually(t, reconcileTimeout, "status.observedGeneration of "+name, func(ctx context.Context) error {
		p, err := k.getProfile(ctx, name)
		if err != nil {
			return err
		}
		if p.Status.ObservedGeneration != p.Generation {
			return fmt.Errorf("status.observedGeneration is %d, generation %d", p.Status.ObservedGeneration, p.Generation)
		}
		got = p
		return nil
	})
	return got
}

func findCondition(p *schedulingv1alpha1.SchedulerProfile, typ string) *metav1.Condition {
	return meta.FindStatusCondition(p.Status.Conditions, typ)
}

func formatConditions(p *schedulingv1alpha1.SchedulerProfile) string {
	var parts []string
	for _, c := range p.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s/%s gen %d", c.Type, c.Status, c.Reason, c.ObservedGeneration))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
