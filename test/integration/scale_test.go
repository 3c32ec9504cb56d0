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
// every member's status reports the new configuration.
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

	memberBuilds, combinedBuilds := builds(t, "member"), builds(t, "combined")
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

	if got := builds(t, "member") - memberBuilds; got != 1 {
		t.Errorf("Schedulers built of members alone for one member's change: %v, want 1", got)
	}
	if got := builds(t, "combined") - combinedBuilds; got != 1 {
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

// builds is the operator's schedops_scheduler_builds_total of a kind of configuration.
func builds(t *testing.T, config string) float64 {
	t.Helper()
	n, err := testutil.CounterSum("schedops_scheduler_builds_total", "config", config)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
