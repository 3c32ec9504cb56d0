package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestForegroundDeleteCompletes: `kubectl delete --cascade=foreground` of a running profile
// completes with the operator running: the garbage collector removes its pods, ReplicaSets and
// Deployment first, and the operator re-creates none of them. On a cluster started with the
// suite it takes about 25 s: the garbage collector watches a kind installed after it started
// (the CRDs) only from its next resync of the served resources, every 30 s; the owner's
// dependents are then gone within a second.
func TestForegroundDeleteCompletes(t *testing.T) {
	ctx := context.Background()
	p := applyProfile(t, `{metadata: {name: e2e-foreground}, spec: {scheduler: {replicas: 2}}}`)
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionAvailable, metav1.ConditionTrue, "", 90*time.Second)
	selector := client.MatchingLabels{"scheduling.schedops.io/profile": p.Name}
	start := time.Now()
	if err := k8s.Delete(ctx, p, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 60*time.Second, "the foreground deletion to complete", func(ctx context.Context) error {
		got := &schedulingv1alpha1.SchedulerProfile{}
		err := k8s.Get(ctx, client.ObjectKeyFromObject(p), got)
		switch {
		case err == nil:
			return fmt.Errorf("the profile is still there, finalizers %v", got.Finalizers)
		case !apierrors.IsNotFound(err):
			return err
		}
		for kind, list := range map[string]client.ObjectList{"Deployments": &appsv1.DeploymentList{}, "ReplicaSets": &appsv1.ReplicaSetList{}, "pods": &corev1.PodList{}} {
			if err := k8s.List(ctx, list, selector); err != nil {
				return err
			}
			if n := meta.LenList(list); n > 0 {
				return fmt.Errorf("%d %s left", n, kind)
			}
		}
		return nil
	})
	t.Logf("The foreground deletion of a running profile with 2 replicas completed in %s", time.Since(start).Round(100*time.Millisecond))
}
