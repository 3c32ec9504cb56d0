package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// noPool is NodePool's args of a node pool that no node is in.
const noPool = `{"nodeSelector":{"matchLabels":{"pool":"none"}}}`

// createProfilePods creates nodes ready nodes, name-n0 and on, and pods pods of scheduler name
// running on name-n0, all deleted when the test ends: the pods that a preview of profile name
// simulates.
func (k *cluster) createProfilePods(t *testing.T, name string, nodes, pods int) {
	t.Helper()
	for i := range nodes {
		createReadyNode(t, t.Context(), k.admin, fmt.Sprintf("%s-n%d", name, i), map[string]string{"pool": "a"})
	}
	for i := range pods {
		pod := testutil.MakePod(fmt.Sprintf("%s-%d", name, i), "default").SchedulerName(name).Request(corev1.ResourceCPU, "100m").Obj()
		pod.Spec.NodeName = name + "-n0"
		if err := k.admin.Create(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k.admin.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	}
}

// TestPreviewGuardRefusesThenReportRolls: a profile whose three pods run on two nodes is
// changed to a node pool that no node is in. In Guard mode the change is previewed, refused
// (Progressing=False, PreviewRefused, naming a pod and NodePool's reason) and not rolled out:
// the Deployment keeps its configuration. status.preview compares the two configurations, and
// an event sums it up. Set to Report, the same change rolls out.
func TestPreviewGuardRefusesThenReportRolls(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("preview")
	k.createProfilePods(t, name, 2, 3)
	p := testutil.MakeProfile(name).Obj()
	p.Spec.Rollout.Preview.Mode = schedulingv1alpha1.PreviewGuard
	k.createProfile(t, p)

	// A new profile is previewed against nothing: its three pods all fit, so it rolls out.
	first := k.waitForRollout(t, name)
	k.waitForProfile(t, name, "to show the preview of its first configuration", func(p *schedulingv1alpha1.SchedulerProfile) error {
		pv := p.Status.Preview
		if pv.To.ConfigHash != first.Status.ConfigHash || pv.From.ConfigHash != "" || pv.Pods != 3 || pv.To.Unschedulable != 0 || pv.To.NodesUsed == 0 {
			return fmt.Errorf("status.preview = %+v", pv)
		}
		return nil
	})
	deployment := name + "-scheduler"
	k.markDeploymentAvailable(t, deployment)

	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.Plugins = &schedulingv1alpha1.Plugins{MultiPoint: schedulingv1alpha1.PluginSet{Enabled: []schedulingv1alpha1.Plugin{{Name: "NodePool"}}}}
		p.Spec.PluginConfig = []schedulingv1alpha1.PluginConfig{{Name: "NodePool", Args: runtime.RawExtension{Raw: []byte(noPool)}}}
	})
	refused := k.waitForConditions(t, name, configValid,
		conditionWant{schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonPreviewRefused})
	msg := findCondition(refused, schedulingv1alpha1.ConditionProgressing).Message
	for _, want := range []string{"3 more of the profile's 3 pods unschedulable", "default/" + name + "-0", "node pool"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the PreviewRefused message %q does not say %q", msg, want)
		}
	}
	pv := refused.Status.Preview
	if pv.From.ConfigHash != first.Status.ConfigHash || pv.To.ConfigHash == first.Status.ConfigHash || pv.Pods != 3 || pv.Moved != 3 ||
		pv.From.Unschedulable != 0 || pv.To.Unschedulable != 3 || pv.To.NodesUsed != 0 || len(pv.NewlyUnschedulable) != 3 {
		t.Errorf("status.preview = %+v, want 3 pods moved from %s, 0 then 3 unschedulable", pv, first.Status.ConfigHash)
	}
	if refused.Status.ConfigHash != first.Status.ConfigHash || refused.Status.ObservedGeneration == refused.Generation {
		t.Errorf("status.configHash %s (observedGeneration %d of %d): the refused change was recorded as rolled out", refused.Status.ConfigHash, refused.Status.ObservedGeneration, refused.Generation)
	}
	testutil.Consistently(t, 2*time.Second, "the Deployment keeps the running configuration", func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: deployment}, d); err != nil {
			return err
		}
		if got := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash]; got != first.Status.ConfigHash {
			return fmt.Errorf("the Deployment runs %s, not %s", got, first.Status.ConfigHash)
		}
		return nil
	})
	k.waitForEvent(t, refused, corev1.EventTypeWarning, "Preview", "0 unschedulable")

	// Report: the same change rolls out, and the preview stays in the status.
	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.Rollout.Preview.Mode = schedulingv1alpha1.PreviewReport
	})
	rolled := k.waitForRollout(t, name)
	if rolled.Status.ConfigHash != pv.To.ConfigHash {
		t.Errorf("status.configHash %s, want the previewed %s", rolled.Status.ConfigHash, pv.To.ConfigHash)
	}
	if c := meta.FindStatusCondition(rolled.Status.Conditions, schedulingv1alpha1.ConditionProgressing); c == nil || strings.HasPrefix(c.Reason, "Preview") {
		t.Errorf("Progressing = %+v, want the rollout's", c)
	}
	if rolled.Status.Preview.To.Unschedulable != 3 {
		t.Errorf("status.preview = %+v, want the preview of the change that rolled out", rolled.Status.Preview)
	}
}

// TestPreviewReportDoesNotWait: in Report mode (the default) a change rolls out at once, and
// its preview comes into the status when it ends.
func TestPreviewReportDoesNotWait(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("report")
	k.createProfilePods(t, name, 1, 1)
	k.createProfile(t, testutil.MakeProfile(name).Obj())
	first := k.waitForRollout(t, name)
	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.PluginConfig = []schedulingv1alpha1.PluginConfig{{Name: "NodePool", Args: runtime.RawExtension{Raw: []byte(noPool)}}}
		p.Spec.Plugins = &schedulingv1alpha1.Plugins{MultiPoint: schedulingv1alpha1.PluginSet{Enabled: []schedulingv1alpha1.Plugin{{Name: "NodePool"}}}}
	})
	second := k.waitForRollout(t, name)
	if second.Status.ConfigHash == first.Status.ConfigHash {
		t.Fatalf("the change did not roll out: status.configHash is still %s", first.Status.ConfigHash)
	}
	k.waitForProfile(t, name, "to show the preview of the change", func(p *schedulingv1alpha1.SchedulerProfile) error {
		pv := p.Status.Preview
		if pv.From.ConfigHash != first.Status.ConfigHash || pv.To.ConfigHash != second.Status.ConfigHash || pv.To.Unschedulable != 1 || len(pv.NewlyUnschedulable) != 1 {
			return fmt.Errorf("status.preview = %+v", pv)
		}
		return nil
	})
}

// TestPreviewGuardHoldsOneMember: two members of one Scheduler change at once. The Guard
// member's change leaves its three pods unschedulable: it is held (PreviewRefused) and the
// Scheduler keeps serving its running entry, while the other member's change rolls out in the
// same revision. Set to Report, the held change rolls out too.
func TestPreviewGuardHoldsOneMember(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	sched := uniqueName("pvsched")
	guarded, other := sched+"-a", sched+"-b"
	k.createProfilePods(t, guarded, 1, 3)
	k.createScheduler(t, testutil.MakeScheduler(sched).Obj())
	p := testutil.MakeProfile(guarded).SchedulerRef(sched).Obj()
	p.Spec.Rollout.Preview.Mode = schedulingv1alpha1.PreviewGuard
	k.createProfile(t, p)
	k.createProfile(t, testutil.MakeProfile(other).SchedulerRef(sched).Obj())
	s := k.waitForScheduler(t, sched, "to serve both members", servesProfiles(guarded, other))
	k.markDeploymentAvailable(t, s.Status.DeploymentName)
	before, _ := k.configEntries(t, s.Status.ConfigMapName)

	k.updateProfile(t, guarded, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.Plugins = &schedulingv1alpha1.Plugins{MultiPoint: schedulingv1alpha1.PluginSet{Enabled: []schedulingv1alpha1.Plugin{{Name: "NodePool"}}}}
		p.Spec.PluginConfig = []schedulingv1alpha1.PluginConfig{{Name: "NodePool", Args: runtime.RawExtension{Raw: []byte(noPool)}}}
	})
	k.updateProfile(t, other, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.Plugins = &schedulingv1alpha1.Plugins{Score: schedulingv1alpha1.PluginSet{Disabled: []schedulingv1alpha1.Plugin{{Name: "ImageLocality"}}}}
	})
	refused := k.waitForConditions(t, guarded, configValid,
		conditionWant{schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonPreviewRefused})
	if msg := findCondition(refused, schedulingv1alpha1.ConditionProgressing).Message; !strings.Contains(msg, "3 more of the profile's 3 pods unschedulable") {
		t.Errorf("the PreviewRefused message %q does not count the three pods", msg)
	}
	if pv := refused.Status.Preview; pv.From.ConfigHash == "" || pv.Pods != 3 || pv.From.Unschedulable != 0 || pv.To.Unschedulable != 3 {
		t.Errorf("status.preview = %+v, want 3 pods, 0 then 3 unschedulable", pv)
	}
	s = k.waitForScheduler(t, sched, "to roll out the other member's change", func(s *schedulingv1alpha1.Scheduler) error {
		entries, _ := k.configEntries(t, s.Status.ConfigMapName)
		if entries[other] == before[other] {
			return fmt.Errorf("configuration %s has the other member's old entry", s.Status.ConfigMapName)
		}
		return nil
	})
	if entries, _ := k.configEntries(t, s.Status.ConfigMapName); entries[guarded] != before[guarded] {
		t.Errorf("configuration %s changed the held member's entry:\n%s\nwas:\n%s", s.Status.ConfigMapName, entries[guarded], before[guarded])
	}

	k.updateProfile(t, guarded, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.Rollout.Preview.Mode = schedulingv1alpha1.PreviewReport
	})
	k.waitForScheduler(t, sched, "to roll out the guarded member's change in Report mode", func(s *schedulingv1alpha1.Scheduler) error {
		if entries, _ := k.configEntries(t, s.Status.ConfigMapName); !strings.Contains(entries[guarded], "none") {
			return fmt.Errorf("configuration %s has not the member's node pool: %s", s.Status.ConfigMapName, entries[guarded])
		}
		return nil
	})
}

// TestPreviewGuardRefreshesARefusal: a change to a node pool that no node is in is refused in
// Guard mode; once ready nodes of that pool come, the change is previewed again and rolls out
// within two minutes (here with a refresh interval of 10 s; the default of a minute keeps it
// within two too). On main before outcomes were refreshed, the change stayed refused for good:
// an outcome was kept by its change, whatever nodes came.
func TestPreviewGuardRefreshesARefusal(t *testing.T) {
	k := suiteCluster()
	k.startOperatorWith(t, func(o *controllers.ManagerOptions) { o.Preview.RefreshInterval = 10 * time.Second })
	name := uniqueName("refresh")
	k.createProfilePods(t, name, 2, 3)
	p := testutil.MakeProfile(name).Obj()
	p.Spec.Rollout.Preview.Mode = schedulingv1alpha1.PreviewGuard
	k.createProfile(t, p)
	first := k.waitForRollout(t, name)
	k.markDeploymentAvailable(t, name+"-scheduler")

	pool := `{"nodeSelector":{"matchLabels":{"pool":"` + name + `"}}}`
	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.Plugins = &schedulingv1alpha1.Plugins{MultiPoint: schedulingv1alpha1.PluginSet{Enabled: []schedulingv1alpha1.Plugin{{Name: "NodePool"}}}}
		p.Spec.PluginConfig = []schedulingv1alpha1.PluginConfig{{Name: "NodePool", Args: runtime.RawExtension{Raw: []byte(pool)}}}
	})
	refused := k.waitForConditions(t, name, configValid,
		conditionWant{schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonPreviewRefused})
	if refused.Status.ConfigHash != first.Status.ConfigHash {
		t.Fatalf("status.configHash %s, want the running %s", refused.Status.ConfigHash, first.Status.ConfigHash)
	}
	computed := refused.Status.Preview.StartTime

	for i := range 2 {
		createReadyNode(t, t.Context(), k.admin, fmt.Sprintf("%s-pool-%d", name, i), map[string]string{"pool": name})
	}
	start := time.Now()
	rolled := k.waitForConditionsWithin(t, 2*time.Minute, name, configValid,
		conditionWant{schedulingv1alpha1.ConditionProgressing, metav1.ConditionTrue, schedulingv1alpha1.ReasonRollingOut})
	t.Logf("The refused change rolled out %s after its pool's nodes came", time.Since(start).Round(time.Second))
	if rolled.Status.ConfigHash == first.Status.ConfigHash {
		t.Errorf("status.configHash %s: the change did not roll out", rolled.Status.ConfigHash)
	}
	if pv := rolled.Status.Preview; !computed.Before(&pv.StartTime) || pv.To.Unschedulable != 0 {
		t.Errorf("status.preview = %+v, want a preview computed after %s that leaves no pod unschedulable", pv, computed)
	}
}

// TestPreviewGuardRefusesARename: a profile whose pods, two running and one pending, name its
// scheduler is renamed in Guard mode. The preview's workload is the pods of both names: the old
// name's lose their scheduler, so the rename is refused (naming the scheduler name the pods keep)
// and the running scheduler keeps serving the old name. On main before previews took the pods of
// the running configuration's names, the rename previewed the 0 pods of the new name and rolled
// out, and the old name's pods waited for good.
func TestPreviewGuardRefusesARename(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("rename")
	k.createProfilePods(t, name, 2, 2)
	pending := testutil.MakePod(name+"-pending", "default").SchedulerName(name).Request(corev1.ResourceCPU, "100m").Obj()
	k.createObject(t, pending)
	p := testutil.MakeProfile(name).Obj()
	p.Spec.Rollout.Preview.Mode = schedulingv1alpha1.PreviewGuard
	k.createProfile(t, p)
	first := k.waitForRollout(t, name)
	k.markDeploymentAvailable(t, name+"-scheduler")

	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) { p.Spec.SchedulerName = name + "-new" })
	refused := k.waitForConditions(t, name, configValid,
		conditionWant{schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonPreviewRefused})
	msg := findCondition(refused, schedulingv1alpha1.ConditionProgressing).Message
	for _, want := range []string{"3 more of the profile's 3 pods unschedulable", `serves scheduler name "` + name + `"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the PreviewRefused message %q does not say %q", msg, want)
		}
	}
	testutil.Consistently(t, 2*time.Second, "the running scheduler keeps serving "+name, func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name + "-scheduler"}, d); err != nil {
			return err
		}
		if got := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash]; got != first.Status.ConfigHash {
			return fmt.Errorf("the Deployment runs %s, not %s", got, first.Status.ConfigHash)
		}
		return nil
	})
}

// TestPreviewGatesOnlyChange: a change of a profile's feature gates alone leaves its
// configuration's hash as it is, and is previewed all the same: status.preview shows a preview
// from and to that configuration, with the gates' change. On main before the gates were part of
// a preview's key, a gates-only change rolled out unpreviewed.
func TestPreviewGatesOnlyChange(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("gatesonly")
	k.createProfilePods(t, name, 2, 3)
	k.createProfile(t, testutil.MakeProfile(name).Obj())
	first := k.waitForRollout(t, name)
	k.waitForProfile(t, name, "to show the preview of its first configuration", func(p *schedulingv1alpha1.SchedulerProfile) error {
		if p.Status.Preview.To.ConfigHash != first.Status.ConfigHash || p.Status.Preview.From.ConfigHash != "" {
			return fmt.Errorf("status.preview = %+v", p.Status.Preview)
		}
		return nil
	})
	k.markDeploymentAvailable(t, name+"-scheduler")

	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.Scheduler.FeatureGates = map[string]bool{"OpportunisticBatching": false}
	})
	k.waitForProfile(t, name, "to show the preview of its gates' change", func(p *schedulingv1alpha1.SchedulerProfile) error {
		pv := p.Status.Preview
		if pv.From.ConfigHash != first.Status.ConfigHash || pv.To.ConfigHash != first.Status.ConfigHash || pv.Pods != 3 {
			return fmt.Errorf("status.preview = %+v, want 3 pods previewed from and to %s", pv, first.Status.ConfigHash)
		}
		return nil
	})
}

// TestPreviewWithoutPodsStartsNoWorker: a change of a profile that has no pods is previewed
// without a worker process. The operator's --preview-memory-limit is 1Mi, which kills any worker
// (TestPreviewGuardRefusesPastABudget); a new profile in Guard mode, no pod of its name, a
// succeeded pod and a pod of another name in the cluster: its preview is decided (0 pods, nothing
// incomplete) and it rolls out. Once a pod of its name waits, its next change starts a worker,
// which runs out of memory, and Guard refuses that change. On main before, the first preview
// started a worker too, and Guard refused the new profile.
func TestPreviewWithoutPodsStartsNoWorker(t *testing.T) {
	k := suiteCluster()
	k.startOperatorWith(t, func(o *controllers.ManagerOptions) { o.Preview.MemoryLimit = 1 << 20 })
	name := uniqueName("nopods")
	for _, p := range []*corev1.Pod{
		testutil.MakePod(name+"-other", "default").SchedulerName(name + "-other").Obj(),
		testutil.MakePod(name+"-done", "default").SchedulerName(name).Obj(),
	} {
		if err := k.admin.Create(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k.admin.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
	}
	done := &corev1.Pod{}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name + "-done"}, done); err != nil {
		t.Fatal(err)
	}
	done.Status.Phase = corev1.PodSucceeded
	if err := k.admin.Status().Update(t.Context(), done); err != nil {
		t.Fatal(err)
	}
	p := testutil.MakeProfile(name).Obj()
	p.Spec.Rollout.Preview.Mode = schedulingv1alpha1.PreviewGuard
	k.createProfile(t, p)
	first := k.waitForRollout(t, name)
	if pv := first.Status.Preview; pv.To.ConfigHash != first.Status.ConfigHash || pv.Pods != 0 || pv.Incomplete != "" || pv.Failure != "" {
		t.Fatalf("status.preview = %+v, want a decided preview of 0 pods to %s", pv, first.Status.ConfigHash)
	}

	pending := testutil.MakePod(name+"-pending", "default").SchedulerName(name).Obj()
	if err := k.admin.Create(t.Context(), pending); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.admin.Delete(context.Background(), pending, client.GracePeriodSeconds(0)) })
	k.markDeploymentAvailable(t, name+"-scheduler")
	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.PercentageOfNodesToScore = ptr.To[int32](50)
	})
	refused := k.waitForConditions(t, name, configValid,
		conditionWant{schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonPreviewRefused})
	if pv := refused.Status.Preview; !strings.HasPrefix(pv.Incomplete, "the preview ran out of its memory budget") {
		t.Errorf("status.preview = %+v, want the worker out of its memory budget", pv)
	}
}

// TestPreviewGuardRefusesPastABudget: past a budget of the preview, status.preview.incomplete says
// which ran out, naming its flag; Guard refuses the change (PreviewRefused), saying to use Report
// or to raise the flag; a Warning event says the same; the operator (this test's process) goes on
// reconciling; and no scheduler runs the change. The budgets: --preview-cpu-limit of a
// millisecond, less than building a simulation's scheduler takes; --preview-memory-limit of 1Mi,
// less than any Go process takes, so that the operator kills the preview's worker process (before
// previews ran in a worker there was no memory budget: the preview decided, whatever memory it
// took of the operator); and --preview-max-objects of 5, fewer than the test's nodes and pods.
func TestPreviewGuardRefusesPastABudget(t *testing.T) {
	cases := []struct {
		name   string
		budget func(*controllers.PreviewOptions)
		flag   string
		// spent begins status.preview.incomplete.
		spent string
	}{
		{name: "cpu", budget: func(o *controllers.PreviewOptions) { o.CPULimit = time.Millisecond }, flag: "--preview-cpu-limit",
			spent: "the preview ran out of its CPU time budget of 1ms (--preview-cpu-limit) for its simulations; nothing was decided: the simulation stopped at its CPU time limit of 1ms"},
		{name: "memory", budget: func(o *controllers.PreviewOptions) { o.MemoryLimit = 1 << 20 }, flag: "--preview-memory-limit",
			spent: "the preview ran out of its memory budget of 1Mi (--preview-memory-limit); nothing was decided"},
		{name: "objects", budget: func(o *controllers.PreviewOptions) { o.MaxObjects = 5 }, flag: "--preview-max-objects",
			spent: "the preview ran out of its object budget of 5 objects (--preview-max-objects)"},
	}
	k := suiteCluster()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k.startOperatorWith(t, func(o *controllers.ManagerOptions) { tc.budget(&o.Preview) })
			name := uniqueName("budget-" + tc.name)
			k.createProfilePods(t, name, 2, 3)
			p := testutil.MakeProfile(name).Obj()
			p.Spec.Rollout.Preview.Mode = schedulingv1alpha1.PreviewGuard
			k.createProfile(t, p)

			refused := k.waitForConditions(t, name, configValid,
				conditionWant{schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonPreviewRefused})
			pv := refused.Status.Preview
			if !strings.HasPrefix(pv.Incomplete, tc.spent) || pv.To.ConfigHash == "" || pv.Failure != "" {
				t.Errorf("status.preview = %+v, want incomplete to begin %q", pv, tc.spent)
			}
			msg := findCondition(refused, schedulingv1alpha1.ConditionProgressing).Message
			for _, want := range []string{tc.spent, "set spec.rollout.preview.mode to Report to roll it out, or have the operator's " + tc.flag + " raised"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the PreviewRefused message %q does not say %q", msg, want)
				}
			}
			k.waitForEvent(t, refused, corev1.EventTypeWarning, "Preview", "is incomplete: "+tc.spent)
			if refused.Status.ConfigHash != "" {
				t.Errorf("status.configHash %s: the refused configuration was recorded as rolled out", refused.Status.ConfigHash)
			}
			if err := k.deploymentAbsent(t.Context(), name+"-scheduler"); err != nil {
				t.Error(err)
			}
		})
	}
}
