package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestMemberChangeBuildsOnlyThatMember: a Scheduler's plan is worked out by both reconcilers on
// every pass of the Scheduler and of each member, but a member's check and the combined
// configuration are built once per change: changing one member of twelve builds one scheduler
// of that member alone and one of the combined configuration, however many passes follow, and
// every member's status reports the new configuration. Each member is passed about once per
// status write of its Scheduler (the new configuration, then its rollout's end), not once more
// per event of the Scheduler's Deployment, per status write of its own or for the change of
// another member: the passes of one change grow with the members, not faster.
func TestMemberChangeBuildsOnlyThatMember(t *testing.T) {
	const members = 12
	k := suiteCluster()
	k.startOperator(t, cfg)
	sched := uniqueName("scale")
	k.createScheduler(t, testutil.MakeScheduler(sched).Obj())
	var names []string
	for i := range members {
		name := fmt.Sprintf("%s-%02d", sched, i)
		names = append(names, name)
		k.createProfile(t, testutil.MakeProfile(name).SchedulerRef(sched).PluginConfig("NodeResourcesFit", mostAllocated).Obj())
	}
	s := k.waitForScheduler(t, sched, "to serve every member", servesProfiles(names...))
	k.markDeploymentAvailable(t, s.Status.DeploymentName)
	k.waitForMembersOn(t, names, s.Status.ConfigHash)

	memberBuilds, combinedBuilds, passes := testutil.SchedulerBuilds(t, "member"), testutil.SchedulerBuilds(t, "combined"), reconciles(t)
	k.updateProfile(t, names[0], func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.PercentageOfNodesToScore = ptr.To[int32](42)
	})
	s = k.waitForScheduler(t, sched, "to roll out the change", func(got *schedulingv1alpha1.Scheduler) error {
		if got.Status.ConfigHash == s.Status.ConfigHash {
			return fmt.Errorf("still on configuration %s", got.Status.ConfigHash)
		}
		return nil
	})
	if entries, _ := k.configEntries(t, s.Status.ConfigMapName); !strings.Contains(entries[names[0]], "percentageOfNodesToScore: 42") {
		t.Fatalf("The entry of %s in %s lacks the change:\n%s", names[0], s.Status.ConfigMapName, entries[names[0]])
	}
	k.markDeploymentAvailable(t, s.Status.DeploymentName)
	k.waitForMembersOn(t, names, s.Status.ConfigHash)

	// About two passes per member and a few of the Scheduler and of the changed member (30 for
	// 12 members); when every Deployment event, every member's own status write and the change
	// itself enqueued every member as well, it was 50.
	got, limit := reconciles(t)-passes, float64(3*members+6)
	t.Logf("Passes of both controllers for one member's change in a Scheduler of %d: %v", members, got)
	if got > limit {
		t.Errorf("Passes of both controllers for one member's change in a Scheduler of %d: %v, want at most %v", members, got, limit)
	}
	if got := testutil.SchedulerBuilds(t, "member") - memberBuilds; got != 1 {
		t.Errorf("Schedulers built of members alone for one member's change: %v, want 1", got)
	}
	if got := testutil.SchedulerBuilds(t, "combined") - combinedBuilds; got != 1 {
		t.Errorf("Schedulers built of the combined configuration for one member's change: %v, want 1", got)
	}
}

// waitForMembersOn waits until every named profile's status reports the configuration hash.
func (k *cluster) waitForMembersOn(t *testing.T, names []string, hash string) {
	t.Helper()
	testutil.Eventually(t, reconcileTimeout, "every member on configuration "+hash, func(ctx context.Context) error {
		for _, name := range names {
			p, err := k.getProfile(ctx, name)
			if err != nil {
				return err
			}
			if p.Status.ConfigHash != hash {
				return fmt.Errorf("%s reports configuration %q", name, p.Status.ConfigHash)
			}
		}
		return nil
	})
}

// reconciles counts the passes of both controllers (controller_runtime_reconcile_total).
func reconciles(t *testing.T) float64 {
	t.Helper()
	var total float64
	for _, controller := range []string{"schedulerprofile", "scheduler"} {
		n, err := testutil.CounterSum("controller_runtime_reconcile_total", "controller", controller)
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}
