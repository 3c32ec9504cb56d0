package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// zoneSpread spreads every workload over zones, strictly: a cluster without zones holds none.
const zoneSpread = `{"defaultingType":"List","defaultConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]}`

// waitForAdvice waits until the profile's Advisory condition describes its generation with
// status and reason, and status.advice holds the codes, in order; it returns the profile.
func (k *cluster) waitForAdvice(t *testing.T, name string, status metav1.ConditionStatus, reason string, codes ...string) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	var got *schedulingv1alpha1.SchedulerProfile
	testutil.Eventually(t, reconcileTimeout, fmt.Sprintf("SchedulerProfile %s to have Advisory=%s (%s) and advice %v", name, status, reason, codes), func(ctx context.Context) error {
		p, err := k.getProfile(ctx, name)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionAdvisory)
		switch {
		case c == nil:
			return fmt.Errorf("no Advisory condition (conditions: %s)", formatConditions(p))
		case c.ObservedGeneration != p.Generation:
			return fmt.Errorf("Advisory describes generation %d, not %d", c.ObservedGeneration, p.Generation)
		case c.Status != status || c.Reason != reason:
			return fmt.Errorf("Advisory is %s (%s): %s", c.Status, c.Reason, c.Message)
		}
		var gotCodes []string
		for _, a := range p.Status.Advice {
			gotCodes = append(gotCodes, a.Code)
		}
		if !slices.Equal(gotCodes, codes) {
			return fmt.Errorf("status.advice has %v: %v", gotCodes, p.Status.Advice)
		}
		got = p
		return nil
	})
	return got
}

// TestAdviceAppearsAndClears: a valid profile that will not do what was meant is rolled out with
// the Advisory condition True, the codes in its message and the findings in status.advice; fixing
// the profile clears them, and so does fixing the cluster (a label on the nodes, a PriorityClass
// gone), which the operator follows without a change of the profile.
func TestAdviceAppearsAndClears(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("advice")
	k.createProfile(t, testutil.MakeProfile(name).PluginConfig("NodeResourcesFit", mostAllocated).Obj())

	p := k.waitForAdvice(t, name, metav1.ConditionTrue, schedulingv1alpha1.ReasonAdviceFound, "SPA101", "SPA104", "SPA105")
	c := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionAdvisory)
	if !strings.Contains(c.Message, "(SPA101, SPA104, SPA105)") {
		t.Errorf("Advisory's message %q does not name the codes", c.Message)
	}
	if !strings.Contains(p.Status.Advice[1].Message, "NodeResourcesBalancedAllocation") {
		t.Errorf("SPA104's message %q does not name NodeResourcesBalancedAllocation", p.Status.Advice[1].Message)
	}
	k.waitForEvent(t, p, corev1.EventTypeNormal, schedulingv1alpha1.ReasonAdviceFound, "(SPA101, SPA104, SPA105)")
	// Advice never holds a rollout back.
	k.waitForRollout(t, name)

	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.Plugins = &schedulingv1alpha1.Plugins{Score: schedulingv1alpha1.PluginSet{Disabled: []schedulingv1alpha1.Plugin{{Name: "NodeResourcesBalancedAllocation"}, {Name: "PodTopologySpread"}}}}
	})
	k.waitForAdvice(t, name, metav1.ConditionFalse, schedulingv1alpha1.ReasonNoAdvice)

	// The cluster: preemption off while a PriorityClass preempts.
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("advice-high")}, Value: 1000}
	k.createObject(t, high)
	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.Plugins.PostFilter = schedulingv1alpha1.PluginSet{Disabled: []schedulingv1alpha1.Plugin{{Name: "DefaultPreemption"}}}
	})
	k.waitForAdvice(t, name, metav1.ConditionTrue, schedulingv1alpha1.ReasonAdviceFound, "SPA501")
	if err := k.admin.Delete(t.Context(), high); err != nil {
		t.Fatal(err)
	}
	k.waitForAdvice(t, name, metav1.ConditionFalse, schedulingv1alpha1.ReasonNoAdvice)

	// The cluster: a strict zone spread on a node without a zone, then labelled with one.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("advice-node")}}
	k.createObject(t, node)
	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.PluginConfig = append(p.Spec.PluginConfig, schedulingv1alpha1.PluginConfig{Name: "PodTopologySpread", Args: runtime.RawExtension{Raw: []byte(zoneSpread)}})
		// That no autoscaler sees the spread (SPA601) is not what this step is about.
		p.Annotations = map[string]string{schedulingv1alpha1.AnnotationAdviceIgnore: "SPA601"}
	})
	p = k.waitForAdvice(t, name, metav1.ConditionTrue, schedulingv1alpha1.ReasonAdviceFound, "SPA301")
	if want := "which 0 of 1 nodes carry"; !strings.Contains(p.Status.Advice[0].Message, want) {
		t.Errorf("SPA301's message %q, want it to say %q", p.Status.Advice[0].Message, want)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Labels = map[string]string{"topology.kubernetes.io/zone": "a"}
	if err := k.admin.Patch(t.Context(), node, patch); err != nil {
		t.Fatal(err)
	}
	k.waitForAdvice(t, name, metav1.ConditionFalse, schedulingv1alpha1.ReasonNoAdvice)

	// An invalid change has no advice to give: the condition says so, the entries are gone.
	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.PluginConfig = []schedulingv1alpha1.PluginConfig{{Name: "NodeResourcesFit", Args: runtime.RawExtension{Raw: []byte(invalidScoring)}}}
	})
	k.waitForAdvice(t, name, metav1.ConditionUnknown, schedulingv1alpha1.ReasonAdviceNotChecked)
}

// createObject creates a cluster-scoped object as the administrator and deletes it when the
// test ends.
func (k *cluster) createObject(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k.admin.Create(t.Context(), obj); err != nil {
		t.Fatalf("Creating %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() {
		if err := client.IgnoreNotFound(k.admin.Delete(context.Background(), obj)); err != nil {
			t.Errorf("Deleting %s: %v", obj.GetName(), err)
		}
	})
}
