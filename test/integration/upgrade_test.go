package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// TestUpgradeWave restarts the operator with new scheduler images, playing the Deployment
// controller: an image that works rolls the schedulers one at a time in name order, the next only
// once the last is available (never two in flight); an image whose pods cannot be placed is rolled
// back on the first, and the others never leave the working image; back to the working image,
// everything settles without a rollback.
func TestUpgradeWave(t *testing.T) {
	k := suiteCluster()
	k.ensureOperatorNamespace(t)
	const v1, v2, broken = "example.com/spo:v1", "example.com/spo:v2", "example.com/spo:broken"
	th := controllers.RolloutThresholds{Unschedulable: testUnschedulable}
	start := func(image string) *framework.Operator {
		o := operatorOptions
		o.SchedulerImage, o.Rollout = image, th
		return framework.StartOperator(t, k.cfg, o)
	}
	prefix := uniqueName("wave")
	var names []string
	for _, n := range []string{"a", "b", "c", "d"} {
		names = append(names, prefix+"-"+n)
	}
	k.settledProfiles(t, start(v1), names)

	// Upgrade to an image that works.
	op := start(v2)
	for i, name := range names {
		k.waitForImages(t, names, v2, i+1)
		testutil.Consistently(t, time.Second, "one scheduler at a time", func(ctx context.Context) error {
			return k.imagesAre(ctx, names, v2, i+1)
		})
		if i+1 < len(names) {
			k.waitForProgressing(t, names[len(names)-1], schedulingv1alpha1.ReasonUpgradeWaiting)
		}
		k.settle(t, name, "v2")
	}
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}

	// Upgrade to an image whose pods cannot be placed: the first is rolled back, the wave stops.
	op = start(broken)
	k.waitForImages(t, names, broken, 1)
	first := k.liveDeployment(t, names[0]+"-scheduler")
	k.createUnschedulablePod(t, k.createReplicaSet(t, first, "broken"))
	k.waitForConditions(t, names[0], conditionWant{schedulingv1alpha1.ConditionDegraded, metav1.ConditionTrue, schedulingv1alpha1.ReasonRolloutFailed})
	k.waitForImages(t, names, broken, 0)
	k.markDeploymentAvailable(t, first.Name) // the old ReplicaSet's pods run on
	if got := k.liveDeployment(t, first.Name).Annotations[schedulingv1alpha1.AnnotationImageRolledBack]; got != broken {
		t.Errorf("the rolled-back Deployment is marked %q, want %q", got, broken)
	}
	for _, name := range names[1:] {
		k.waitForProgressing(t, name, schedulingv1alpha1.ReasonUpgradeStopped)
	}
	testutil.Consistently(t, 2*time.Second, "the others to stay on the working image, the first to stay Degraded", func(ctx context.Context) error {
		p, err := k.getProfile(ctx, names[0])
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionDegraded); c == nil || c.Reason != schedulingv1alpha1.ReasonRolloutFailed {
			return fmt.Errorf("the rolled-back profile's Degraded: %+v", c)
		}
		return k.imagesAre(ctx, names, broken, 0)
	})
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}

	// Back to the working image: nothing rolls, nothing is rolled back, the mark goes.
	start(v2)
	testutil.Eventually(t, reconcileTimeout, "the mark of the stopped wave to go", func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: first.Name}, d); err != nil {
			return err
		}
		if mark, ok := d.Annotations[schedulingv1alpha1.AnnotationImageRolledBack]; ok {
			return fmt.Errorf("still marked %q", mark)
		}
		return nil
	})
	// The apply that drops the mark gives the Deployment a new generation with the same template
	// revision (seen here: 4 to 5), which the Deployment controller would observe at once.
	k.markDeploymentAvailable(t, first.Name)
	for _, name := range names {
		k.waitForProgressing(t, name, schedulingv1alpha1.ReasonRolloutComplete)
		k.waitForImages(t, names, v2, len(names))
	}
	for _, name := range names[1:] {
		if p, err := k.getProfile(t.Context(), name); err != nil || p.Status.FailedRevision != "" {
			t.Errorf("%s after the wave: %v, failedRevision %q", name, err, p.Status.FailedRevision)
		}
	}
}

// settledProfiles creates the profiles names with op running, plays the Deployment controller
// until each runs available, and stops op: the cluster an operator upgrade starts from.
func (k *cluster) settledProfiles(t *testing.T, op *framework.Operator, names []string) {
	t.Helper()
	for _, name := range names {
		k.createProfile(t, testutil.MakeProfile(name).Obj())
	}
	for _, name := range names {
		k.waitForRollout(t, name)
		k.settle(t, name, "v1")
	}
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}
}

// settle plays the Deployment controller for a profile's current template: a ReplicaSet (for a
// later rollback to find) and every replica available; then waits until the profile records the
// revision as the last available.
func (k *cluster) settle(t *testing.T, name, hash string) {
	t.Helper()
	d := k.liveDeployment(t, name+"-scheduler")
	k.createReplicaSet(t, d, hash)
	k.markDeploymentAvailable(t, d.Name)
	k.waitForLastAvailable(t, name, d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision])
}

// imagesAre checks that exactly n of the profiles' Deployments run image, the first n in name order.
func (k *cluster) imagesAre(ctx context.Context, names []string, image string, n int) error {
	var on []string
	for _, name := range names {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name + "-scheduler"}, d); err != nil {
			return err
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Image == image {
				on = append(on, name)
			}
		}
	}
	if !slices.Equal(on, names[:n]) {
		return fmt.Errorf("on %s: %v, want %v", image, on, names[:n])
	}
	return nil
}

func (k *cluster) waitForImages(t *testing.T, names []string, image string, n int) {
	t.Helper()
	testutil.Eventually(t, reconcileTimeout, fmt.Sprintf("%d schedulers on %s", n, image), func(ctx context.Context) error {
		return k.imagesAre(ctx, names, image, n)
	})
}

// waitForProgressing waits for the profile's Progressing condition to have reason.
func (k *cluster) waitForProgressing(t *testing.T, name, reason string) {
	t.Helper()
	k.waitForProfile(t, name, "to be Progressing with reason "+reason, func(p *schedulingv1alpha1.SchedulerProfile) error {
		if c := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionProgressing); c == nil || c.Reason != reason {
			return fmt.Errorf("progressing: %+v", c)
		}
		return nil
	})
}

// TestUpgradeWaveSkipsARefusedScheduler: a Scheduler whose rollout is refused, first in name
// order, neither takes nor holds a turn of the wave: after an operator restart that no longer
// allows its priority class, every other scheduler still moves to the new image, one at a time,
// and the refused one keeps running its image. On main before refused Schedulers left the wave,
// the Scheduler kept the first slot and every other scheduler waited (UpgradeWaiting) for good.
func TestUpgradeWaveSkipsARefusedScheduler(t *testing.T) {
	k := suiteCluster()
	k.ensureOperatorNamespace(t)
	const v1, v2, priorityClass = "example.com/spo:v1", "example.com/spo:v2", "team-critical"
	start := func(image string, allowed ...string) *framework.Operator {
		o := operatorOptions
		o.SchedulerImage, o.AllowedPriorityClasses = image, allowed
		return framework.StartOperator(t, k.cfg, o)
	}
	prefix := uniqueName("refusedwave")
	sched, member := prefix+"-a", prefix+"-a-member" // the Scheduler's Deployment is first in name order
	names := []string{prefix + "-b", prefix + "-c"}

	op := start(v1, priorityClass)
	s := testutil.MakeScheduler(sched).Obj()
	s.Spec.PriorityClassName = ptr.To(priorityClass)
	k.createScheduler(t, s)
	k.createProfile(t, testutil.MakeProfile(member).SchedulerRef(sched).Obj())
	served := k.waitForScheduler(t, sched, "to serve its member", servesProfiles(member))
	k.markDeploymentAvailable(t, served.Status.DeploymentName)
	k.waitForScheduler(t, sched, "to be available", schedulerCondition(conditionWant{schedulingv1alpha1.ConditionAvailable, metav1.ConditionTrue, schedulingv1alpha1.ReasonMinimumReplicasAvailable}))
	k.settledProfiles(t, op, names)

	// The new operator no longer allows the Scheduler's priority class: its rollout is refused.
	start(v2)
	k.waitForScheduler(t, sched, "to be refused", schedulerCondition(conditionWant{schedulingv1alpha1.ConditionDegraded, metav1.ConditionTrue, schedulingv1alpha1.ReasonInvalidConfigNotRolledOut}))
	for i, name := range names {
		k.waitForImages(t, names, v2, i+1)
		k.settle(t, name, "v2")
	}
	if got := schedulerImageOf(k.liveDeployment(t, served.Status.DeploymentName)); got != v1 {
		t.Errorf("the refused Scheduler's Deployment runs %q, want it kept on %q", got, v1)
	}
}

// schedulerImageOf is the image of a scheduler Deployment's scheduler container.
func schedulerImageOf(d *appsv1.Deployment) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "kube-scheduler" {
			return c.Image
		}
	}
	return ""
}

// TestUpgradeWaveMovesAHeldChange: a profile whose change Guard refused, first in name order,
// takes no turn from the others in an operator upgrade: every scheduler moves to the new image,
// one at a time, the held profile's running template (its running configuration, not the refused
// one) too, while its change stays refused; an image that fails on the held profile's move is
// rolled back there, and the Deployment marked so that the wave stops. On main before
// held changes left the wave, the held profile took the first turn and never used it: the
// schedulers after it stayed on the old image with UpgradeWaiting.
func TestUpgradeWaveMovesAHeldChange(t *testing.T) {
	k := suiteCluster()
	k.ensureOperatorNamespace(t)
	const v1, v2, broken = "example.com/spo:v1", "example.com/spo:v2", "example.com/spo:broken"
	start := func(image string) *framework.Operator { return k.startOnImage(t, image) }
	prefix := uniqueName("heldwave")
	held, names := prefix+"-a", []string{prefix + "-b", prefix + "-c"}
	op := start(v1)
	k.createProfilePods(t, held, 2, 3)
	p := testutil.MakeProfile(held).Obj()
	p.Spec.Rollout.Preview.Mode = schedulingv1alpha1.PreviewGuard
	k.createProfile(t, p)
	for _, name := range names {
		k.createProfile(t, testutil.MakeProfile(name).Obj())
	}
	running := k.waitForRollout(t, held)
	k.settle(t, held, "v1")
	for _, name := range names {
		k.waitForRollout(t, name)
		k.settle(t, name, "v1")
	}
	k.updateProfile(t, held, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.Plugins = &schedulingv1alpha1.Plugins{MultiPoint: schedulingv1alpha1.PluginSet{Enabled: []schedulingv1alpha1.Plugin{{Name: "NodePool"}}}}
		p.Spec.PluginConfig = []schedulingv1alpha1.PluginConfig{{Name: "NodePool", Args: runtime.RawExtension{Raw: []byte(noPool)}}}
	})
	k.waitForProgressing(t, held, schedulingv1alpha1.ReasonPreviewRefused)
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}

	op = start(v2)
	deployment := held + "-scheduler"
	// The held profile takes no turn from the others, nor waits for one: the three move one at a
	// time, in an order that depends on whose pass comes first.
	all := append([]string{held}, names...)
	settled := map[string]bool{}
	for len(settled) < len(all) {
		var moved string
		testutil.Eventually(t, reconcileTimeout, "the next scheduler on "+v2, func(ctx context.Context) error {
			var on []string
			for _, name := range all {
				if !settled[name] && schedulerImageOf(k.liveDeployment(t, name+"-scheduler")) == v2 {
					on = append(on, name)
				}
			}
			if len(on) != 1 {
				return fmt.Errorf("moving now: %v, want one", on)
			}
			moved = on[0]
			return nil
		})
		testutil.Consistently(t, time.Second, "one scheduler at a time", func(ctx context.Context) error {
			for _, name := range all {
				if !settled[name] && name != moved && schedulerImageOf(k.liveDeployment(t, name+"-scheduler")) == v2 {
					return fmt.Errorf("%s moved while %s rolls out", name, moved)
				}
			}
			return nil
		})
		k.settle(t, moved, "v2")
		settled[moved] = true
	}
	if got := k.liveDeployment(t, deployment).Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash]; got != running.Status.ConfigHash {
		t.Errorf("the held profile's Deployment runs configuration %s, not the running %s: the held change rolled out", got, running.Status.ConfigHash)
	}
	k.waitForProgressing(t, held, schedulingv1alpha1.ReasonPreviewRefused)
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}

	// An image whose pods cannot be placed, with the held profile alone: its move is judged as
	// any rollout and rolled back, and the Deployment is marked so that the wave stops.
	for _, name := range names {
		k.deleteProfileAndObjects(t, name)
	}
	o := operatorOptions
	o.SchedulerImage, o.Rollout = broken, controllers.RolloutThresholds{Unschedulable: testUnschedulable}
	framework.StartOperator(t, k.cfg, o)
	k.waitForImage(t, deployment, broken)
	k.createUnschedulablePod(t, k.createReplicaSet(t, k.liveDeployment(t, deployment), "broken"))
	testutil.Eventually(t, reconcileTimeout, "the held profile's move rolled back", func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: deployment}, d); err != nil {
			return err
		}
		if got := schedulerImageOf(d); got != v2 || d.Annotations[schedulingv1alpha1.AnnotationImageRolledBack] != broken {
			return fmt.Errorf("runs %s, marked %q", got, d.Annotations[schedulingv1alpha1.AnnotationImageRolledBack])
		}
		return nil
	})
	if got := k.liveDeployment(t, deployment).Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash]; got != running.Status.ConfigHash {
		t.Errorf("after the rollback the held profile's Deployment runs configuration %s, not the running %s", got, running.Status.ConfigHash)
	}
	k.waitForProgressing(t, held, schedulingv1alpha1.ReasonPreviewRefused)
}

// startOnImage runs the operator, as the administrator, with the scheduler image image.
func (k *cluster) startOnImage(t *testing.T, image string) *framework.Operator {
	t.Helper()
	o := operatorOptions
	o.SchedulerImage = image
	return framework.StartOperator(t, k.cfg, o)
}

// waitForImage waits until the scheduler Deployment name runs image.
func (k *cluster) waitForImage(t *testing.T, name, image string) {
	t.Helper()
	testutil.Eventually(t, reconcileTimeout, "Deployment "+name+" on "+image, func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, d); err != nil {
			return err
		}
		if got := schedulerImageOf(d); got != image {
			return fmt.Errorf("runs %s", got)
		}
		return nil
	})
}
