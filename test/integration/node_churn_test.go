package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestNodeChurnBuildsNoSchedulers: every node that comes, goes or is relabelled enqueues every
// profile (their advice reads the nodes), and each dedicated profile's pass validates its
// configuration. With 100 dedicated profiles settled, 10 node relabels cost fewer than 20
// schedulers built in all: a pass that meets a configuration it validated before builds none.
// Before validateDedicatedOnce, every pass built its profile's scheduler again: the relabels
// cost at least one build per profile (the test wants a pass of each), 100 or more.
func TestNodeChurnBuildsNoSchedulers(t *testing.T) {
	const profiles, relabels = 100, 10
	k := suiteCluster()
	k.startOperator(t, cfg)
	prefix := uniqueName("churn")
	var names []string
	for i := range profiles {
		name := fmt.Sprintf("%s-%03d", prefix, i)
		names = append(names, name)
		k.createProfile(t, testutil.MakeProfile(name).PluginConfig("NodeResourcesFit", mostAllocated).Obj())
	}
	testutil.Eventually(t, 3*reconcileTimeout, "every profile valid with its Deployment", func(ctx context.Context) error {
		for _, name := range names {
			p, err := k.getProfile(ctx, name)
			if err != nil {
				return err
			}
			if p.Status.DeploymentName == "" || !conditionIs(p, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue) {
				return fmt.Errorf("%s not rolled out yet", name)
			}
		}
		return nil
	})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("churn-node")}}
	k.createObject(t, node)
	waitForQuiet(t)

	builds, passes := testutil.SchedulerBuilds(t, "dedicated"), reconciles(t)
	for i := range relabels {
		patch := client.MergeFrom(node.DeepCopy())
		node.Labels = map[string]string{"churn": fmt.Sprint(i)}
		if err := k.admin.Patch(t.Context(), node, patch); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitForQuiet(t)
	gotPasses, gotBuilds := reconciles(t)-passes, testutil.SchedulerBuilds(t, "dedicated")-builds
	t.Logf("%d node relabels with %d dedicated profiles: %v passes, %v schedulers built", relabels, profiles, gotPasses, gotBuilds)
	if gotPasses < profiles {
		t.Fatalf("%v passes after %d relabels, want at least %d: the relabels did not pass every profile", gotPasses, relabels, profiles)
	}
	if gotBuilds >= profiles/5 {
		t.Errorf("%v schedulers built for %d node relabels with %d dedicated profiles, want fewer than %d", gotBuilds, relabels, profiles, profiles/5)
	}
}

// conditionIs tells whether the profile's condition of type has status.
func conditionIs(p *schedulingv1alpha1.SchedulerProfile, conditionType string, status metav1.ConditionStatus) bool {
	c := findCondition(p, conditionType)
	return c != nil && c.Status == status
}

// waitForQuiet waits until the controllers have made no pass for two seconds.
func waitForQuiet(t *testing.T) {
	t.Helper()
	last := reconciles(t)
	// A new profile's first preview runs in a worker process, one at a time: on a loaded machine
	// the previews of many profiles, and the passes they enqueue, take over a minute.
	testutil.Eventually(t, 4*reconcileTimeout, "the controllers quiet", func(context.Context) error {
		time.Sleep(2 * time.Second)
		now := reconciles(t)
		if passes := now - last; passes != 0 {
			last = now
			return fmt.Errorf("%v passes in the last 2 s", passes)
		}
		return nil
	})
}
