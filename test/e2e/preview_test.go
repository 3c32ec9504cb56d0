package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// previewProfile is the profile of TestPreviewGuard in a preview mode, with its pods sent to a
// node pool that no node is in when emptyPool is set.
func previewProfile(mode string, emptyPool bool) string {
	doc := fmt.Sprintf(`
metadata: {name: e2e-preview}
spec:
  rollout: {preview: {mode: %s}}`, mode)
	if emptyPool {
		doc += `
  plugins:
    multiPoint: {enabled: [{name: NodePool}]}
  pluginConfig:
  - name: NodePool
    args: {nodeSelector: {matchLabels: {pool: none}}}`
	}
	return doc
}

// TestPreviewGuard: a profile with running pods is changed to a node pool that no node is in.
// In Guard mode the change is refused (Progressing=False, PreviewRefused, naming a pod with
// NodePool's reason) and not rolled out: the old scheduler keeps running and binds a new pod.
// In Report mode the same change rolls out, the status shows the pods it leaves
// unschedulable, and the real scheduler then leaves a new pod pending with NodePool's reason.
func TestPreviewGuard(t *testing.T) {
	nodes := makeNodes(t, "preview",
		nodeSpec{name: "a", cpus: 4, labels: map[string]string{poolKey: "batch"}},
		nodeSpec{name: "b", cpus: 4, labels: map[string]string{poolKey: "batch"}})
	p := applyProfile(t, previewProfile("Guard", false))
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 60*time.Second)
	testutil.Eventually(t, 60*time.Second, "the first configuration to roll out", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if p.Status.ConfigHash == "" {
			return fmt.Errorf("conditions: %s", conditions(p))
		}
		return nil
	})
	running := p.Status.ConfigHash
	waitScheduler(t, p.Name, running)
	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, nodes.pod(fmt.Sprintf("pv-%d", i), p.Name, 500))
	}
	schedule(t, pods...)

	applyProfile(t, previewProfile("Guard", true))
	refused := waitCondition(t, p.Name, schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonPreviewRefused, 120*time.Second)
	msg := meta.FindStatusCondition(refused.Status.Conditions, schedulingv1alpha1.ConditionProgressing).Message
	if !strings.Contains(msg, "3 more of the profile's 3 pods") || !strings.Contains(msg, "default/preview-pv-") || !strings.Contains(msg, "node pool") {
		t.Errorf("the PreviewRefused message %q does not name the 3 stranded pods with NodePool's reason", msg)
	}
	if pv := refused.Status.Preview; pv.From.ConfigHash != running || pv.To.Unschedulable != 3 || pv.From.Unschedulable != 0 || pv.Moved != 3 {
		t.Errorf("status.preview = %+v, want 3 pods moved from %s, 0 then 3 unschedulable", pv, running)
	}
	if refused.Status.ConfigHash != running || runner.Hash(p.Name+"-scheduler") != running {
		t.Errorf("the refused change rolled out: status.configHash %s, the scheduler runs %s, want %s", refused.Status.ConfigHash, runner.Hash(p.Name+"-scheduler"), running)
	}
	// The old scheduler still binds.
	schedule(t, nodes.pod("pv-guarded", p.Name, 500))

	applyProfile(t, previewProfile("Report", true))
	var rolled *schedulingv1alpha1.SchedulerProfile
	testutil.Eventually(t, 90*time.Second, "the change to roll out in Report mode", func(ctx context.Context) error {
		rolled = &schedulingv1alpha1.SchedulerProfile{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), rolled); err != nil {
			return err
		}
		if rolled.Status.ConfigHash == running || rolled.Status.ConfigHash != rolled.Status.Preview.To.ConfigHash {
			return fmt.Errorf("status.configHash %s, preview %+v; conditions: %s", rolled.Status.ConfigHash, rolled.Status.Preview, conditions(rolled))
		}
		return nil
	})
	if pv := rolled.Status.Preview; pv.To.Unschedulable == 0 || len(pv.NewlyUnschedulable) == 0 || !strings.Contains(pv.NewlyUnschedulable[0].Reason, "node pool") {
		t.Errorf("status.preview = %+v, want the pods the change leaves unschedulable", pv)
	}
	waitScheduler(t, p.Name, rolled.Status.ConfigHash)
	// What the preview said is what the real scheduler does: a new pod stays pending.
	stranded := nodes.pod("pv-stranded", p.Name, 500)
	if err := k8s.Create(t.Context(), stranded); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), stranded, client.GracePeriodSeconds(0)) })
	testutil.Eventually(t, 60*time.Second, "the new pod to be unschedulable", func(ctx context.Context) error {
		got := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(stranded), got); err != nil {
			return err
		}
		if got.Spec.NodeName != "" {
			t.Fatalf("the pod was bound to %s, outside the empty node pool", got.Spec.NodeName)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && contains(c.Message, "outside the scheduler's node pool") {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", got.Status.Conditions)
	})
}
