package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
)

// TestControllerPrunesOldConfigMaps changes a profile five times. envtest runs no Deployment
// controller, so no ReplicaSet mounts any ConfigMap: the current one and the newest three others
// are kept for rollbacks, and the two oldest are deleted.
func TestControllerPrunesOldConfigMaps(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("ctl-prune")
	k.createProfile(t, makeProfile(name).obj())
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
	eventually(t, reconcileTimeout, "only the current ConfigMap and the newest 3 others remain", func(ctx context.Context) error {
		var cms corev1.ConfigMapList
		if err := k.admin.List(ctx, &cms, client.InNamespace(operatorNamespace), client.MatchingLabels{controllers.LabelProfile: name}); err != nil {
			return err
		}
		var got []string
		for _, cm := range cms.Items {
			got = append(got, cm.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("ConfigMaps %v, want %v (created in the order %v)", got, want, names)
		}
		return nil
	})
}
