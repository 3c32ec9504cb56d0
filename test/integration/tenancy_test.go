package integration

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// spelledOutQueueSort is the default queue sort written out: the same plugin sorts the queue,
// but upstream compares the queueSort sets as written.
var spelledOutQueueSort = &schedulingv1alpha1.Plugins{QueueSort: schedulingv1alpha1.PluginSet{
	Disabled: []schedulingv1alpha1.Plugin{{Name: "*"}},
	Enabled:  []schedulingv1alpha1.Plugin{{Name: "PrioritySort"}},
}}

// TestOldestMemberSpellsOutItsQueueSort: the oldest member of a Scheduler writes the default
// queue sort out, and another member's next change still rolls out. On main before queue sorts
// were compared in one spelling (CanonicalQueueSort), the plan refused the younger member
// (QueueSortConflict against the oldest) and the combined configuration failed upstream's
// validation, so nothing rolled out while the oldest member reported ConfigValid=True.
func TestOldestMemberSpellsOutItsQueueSort(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, cfg)
	sched := uniqueName("spelled")
	a, b := sched+"-a", sched+"-b" // a is the oldest: created first, and first by name
	k.createScheduler(t, testutil.MakeScheduler(sched).Obj())
	pa := testutil.MakeProfile(a).SchedulerRef(sched).PluginConfig("NodeResourcesFit", mostAllocated).Obj()
	pa.Spec.Plugins = spelledOutQueueSort
	k.createProfile(t, pa)
	k.createProfile(t, testutil.MakeProfile(b).SchedulerRef(sched).PluginConfig("NodeResourcesFit", mostAllocated).Obj())

	s := k.waitForScheduler(t, sched, "to serve a and b", servesProfiles(a, b))
	k.markDeploymentAvailable(t, s.Status.DeploymentName)
	for _, name := range []string{a, b} {
		k.waitForConditions(t, name, configValid, available, rolledOut)
	}

	k.updateProfile(t, b, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.PluginConfig[0].Args = runtime.RawExtension{Raw: []byte(leastAllocated)}
	})
	changed := k.waitForScheduler(t, sched, "to roll b's change", func(got *schedulingv1alpha1.Scheduler) error {
		if got.Status.ConfigHash == s.Status.ConfigHash {
			return fmt.Errorf("still %s", got.Status.ConfigHash)
		}
		return nil
	})
	entries, _ := k.configEntries(t, changed.Status.ConfigMapName)
	if !strings.Contains(entries[b], "LeastAllocated") || !strings.Contains(entries[a], "MostAllocated") {
		t.Errorf("after changing b the entries are %v", entries)
	}
	if strings.Contains(entries[a], "queueSort") {
		t.Errorf("a's entry writes its queue sort, unlike b's: %s", entries[a])
	}
	k.markDeploymentAvailable(t, changed.Status.DeploymentName)
	for _, name := range []string{a, b} {
		k.waitForConditions(t, name, configValid, available, rolledOut)
	}
}
