package webhook

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestAdviceReachesTheClient: a profile with advice is admitted, and the client receives the
// advice as warnings (what kubectl apply prints), one per finding, starting with its code; the
// annotation scheduling.schedops.io/advice-ignore silences the codes it lists; an update that
// fixes the profile draws none.
func TestAdviceReachesTheClient(t *testing.T) {
	ctx := t.Context()
	c, recorded := warningClient(t)
	take := func() []string {
		var codes []string
		for _, w := range recorded.Take() {
			codes = append(codes, strings.SplitN(w, ":", 2)[0])
		}
		return codes
	}
	const mostAllocated = `{"scoringStrategy":{"type":"MostAllocated"}}`

	p := testutil.MakeProfile("advice-outvoted").PluginConfig("NodeResourcesFit", mostAllocated).Obj()
	if err := c.Create(ctx, p); err != nil {
		t.Fatalf("A profile with advice was refused: %v", err)
	}
	t.Cleanup(func() {
		_ = k8sClient.Delete(context.Background(), p, client.PropagationPolicy(metav1.DeletePropagationBackground))
	})
	if diff := cmp.Diff([]string{"SPA101", "SPA104", "SPA105"}, take()); diff != "" {
		t.Errorf("Warnings of the create (-want +got):\n%s", diff)
	}

	silenced := testutil.MakeProfile("advice-silenced").PluginConfig("NodeResourcesFit", mostAllocated).Obj()
	silenced.Annotations = map[string]string{schedulingv1alpha1.AnnotationAdviceIgnore: "SPA101,SPA105"}
	if err := c.Create(ctx, silenced, client.DryRunAll); err != nil {
		t.Fatalf("A dry-run create was refused: %v", err)
	}
	if diff := cmp.Diff([]string{"SPA104"}, take()); diff != "" {
		t.Errorf("Warnings of the silenced profile (-want +got):\n%s", diff)
	}

	// The operator writes the profile's status meanwhile: update the latest version. A conflict
	// is refused before admission, so it draws no warnings.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fixed := &schedulingv1alpha1.SchedulerProfile{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), fixed); err != nil {
			return err
		}
		fixed.Spec.Plugins = &schedulingv1alpha1.Plugins{Score: schedulingv1alpha1.PluginSet{Disabled: []schedulingv1alpha1.Plugin{{Name: "NodeResourcesBalancedAllocation"}, {Name: "PodTopologySpread"}}}}
		return c.Update(ctx, fixed)
	})
	if err != nil {
		t.Fatalf("The fix was refused: %v", err)
	}
	if got := take(); len(got) != 0 {
		t.Errorf("The fixed profile drew warnings %v", got)
	}
}
