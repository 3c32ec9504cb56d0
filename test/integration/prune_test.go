package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestControllerPrunesOldConfigMaps changes a profile five times. envtest runs no Deployment
// controller, so no ReplicaSet mounts any ConfigMap: the current one and the newest three others
// are kept for rollbacks, and the two oldest are deleted.
func TestControllerPrunesOldConfigMaps(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("ctl-prune")
	k.createProfile(t, testutil.MakeProfile(name).Obj())
	var names []string
	names = append(names, k.waitForRollout(t, name).Status.ConfigMapName)
	for i := 1; i <= 5; i++ {
		k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
			p.Spec.PluginConfig = []schedulingv1alpha1.PluginConfig{{
				Name: "InterPodAffinity",
				Args: runtime.RawExtension{Raw: fmt.Appendf(nil, `{"hardPodAffinityWeight": %d}`, i)},
			}}
		})
		names = append(names, k.waitForRollout(t, name).Status.ConfigMapName)
	}
	want := names[len(names)-4:]
	slices.Sort(want)
	testutil.Eventually(t, reconcileTimeout, "only the current ConfigMap and the newest 3 others to remain", func(ctx context.Context) error {
		got, err := k.profileConfigMaps(ctx, name)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("ConfigMaps %v, want %v (created in the order %v)", got, want, names)
		}
		return nil
	})
}
