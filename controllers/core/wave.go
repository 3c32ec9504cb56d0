package core

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/deploy"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// DefaultUpgradeMaxInFlight is how many schedulers an operator upgrade rolls to its new
// scheduler image at a time.
const DefaultUpgradeMaxInFlight = 1

// upgradeStep is what the wave of an operator's new scheduler image says of one scheduler.
type upgradeStep struct {
	// image is the image the scheduler's pod template names in this pass.
	image string
	// legacyLease keeps the scheduler, while held, on the lease of an operator version before
	// profile.LeasePrefix that its template runs on: the move to the prefixed lease is part of
	// its turn.
	legacyLease bool
	// config is the configuration the pass applied: the profiles' own, on legacyLease when it is
	// kept; nil when nothing was applied.
	config *profile.Config
	// held says why the scheduler stays on its image, while the operator has another one;
	// empty when it is not held.
	held string
	// stopped is set when the wave stopped: the new image was rolled back on a scheduler.
	stopped bool
}

// waveMember is one scheduler Deployment as the wave sees it.
type waveMember struct {
	name  string
	image string
	// leased is set when the template runs on a lease with profile.LeasePrefix (it carries
	// schedulingv1alpha1.AnnotationLease); a template of an operator version before the prefix does not.
	leased    bool
	available bool
	// moves is set when the Deployment's owner is reconciled into a new template: it exists, is
	// not being deleted, and (a profile) has a valid configuration. One that does not move neither
	// waits for a turn nor holds one, or it would hold up the wave for good.
	moves bool
	// heldChange is set when the owner's change is held by its preview: it takes no turn from
	// the others, but its running template moves to the new image in its own pass (runHeld), and
	// counts as in flight while that rolls.
	heldChange bool
	// rolledBack is the image a rollback of this scheduler returned from, if any.
	rolledBack string
}

// upgraded tells whether the scheduler's template has what the operator gives every template:
// its scheduler image and a prefixed lease.
func (m waveMember) upgraded(image string) bool {
	return m.image == image && m.leased
}

// planUpgrade decides the image and lease of one scheduler (self, a Deployment name) during a
// change the operator makes to every template, not a user's: a change of its scheduler image to
// image, and the move from the leases of an operator version before profile.LeasePrefix. The
// schedulers move a few at a time (maxInFlight), in the order of their Deployment names, the next
// only once those moved are available; the first rollback from the new image stops the wave and
// the rest stay on the image (and lease) that works. A downgrade is the same wave towards the
// older image. It reads no cluster: the members are an input.
func planUpgrade(self string, image string, members []waveMember, maxInFlight int) upgradeStep {
	i := slices.IndexFunc(members, func(m waveMember) bool { return m.name == self })
	if i < 0 || members[i].image == "" || members[i].upgraded(image) {
		return upgradeStep{image: image}
	}
	current, legacy := members[i].image, !members[i].leased
	for _, m := range members {
		if m.rolledBack == image {
			return upgradeStep{image: current, legacyLease: legacy, stopped: true, held: fmt.Sprintf(
				"the operator's scheduler image %s was rolled back on Deployment %s, so the upgrade stopped: this scheduler stays on %s until the operator's image changes", image, m.name, current)}
		}
	}
	var inFlight, pending []string
	for _, m := range members {
		switch {
		case m.upgraded(image) && !m.available && (m.moves || m.heldChange):
			inFlight = append(inFlight, m.name)
		case !m.moves && m.name != self:
		case !m.upgraded(image):
			pending = append(pending, m.name)
		}
	}
	slices.Sort(pending)
	slots := max(maxInFlight, 1) - len(inFlight)
	pos := slices.Index(pending, self)
	if pos >= 0 && pos < slots {
		return upgradeStep{image: image}
	}
	from, to := current, image
	if legacy {
		from += " and the lease of an operator version before the lease prefix"
		to += " and its " + profile.LeasePrefix + " lease"
	}
	return upgradeStep{image: current, legacyLease: legacy, held: fmt.Sprintf(
		"waiting for its turn to move from %s to the operator's scheduler image %s: %d scheduler(s) at a time, %d rolling out now%s, %d waiting%s",
		from, to, max(maxInFlight, 1), len(inFlight), deployments(" (", inFlight, ")"), len(pending), deployments("; before it: ", pending[:max(pos, 0)], ""))}
}

// deployments names a few Deployments between prefix and suffix, for a held scheduler's status;
// "" for none.
func deployments(prefix string, names []string, suffix string) string {
	const shown = 3
	switch {
	case len(names) == 0:
		return ""
	case len(names) > shown:
		return prefix + "Deployment " + strings.Join(names[:shown], ", ") + fmt.Sprintf(" and %d more", len(names)-shown) + suffix
	default:
		return prefix + "Deployment " + strings.Join(names, ", ") + suffix
	}
}

// upgradeStepOf reads the scheduler Deployments of the operator's namespace and plans the image
// of the process's Deployment.
func (r *processObjects) upgradeStepOf(ctx context.Context, proc *plan.Process) (upgradeStep, error) {
	// A scheduler on the operator's image and a prefixed lease, or none, moves nowhere: the
	// others need not be read.
	if live, err := r.LiveDeployment(ctx, proc); err != nil || live == nil || r.upgraded(live) {
		return upgradeStep{image: r.Settings.Image}, err
	}
	var list appsv1.DeploymentList
	if err := r.client.List(ctx, &list, client.InNamespace(r.Settings.Namespace),
		client.MatchingLabels{plan.LabelName: "kube-scheduler", plan.LabelManagedBy: schedulingv1alpha1.FieldManager}); err != nil {
		return upgradeStep{}, fmt.Errorf("listing scheduler Deployments: %w", err)
	}
	moving, held, err := r.movingOwners(ctx)
	if err != nil {
		return upgradeStep{}, err
	}
	members := make([]waveMember, 0, len(list.Items))
	for i := range list.Items {
		d := &list.Items[i]
		members = append(members, waveMember{
			name: d.Name, image: schedulerImageOf(d), leased: leased(d.Spec.Template.Annotations), available: plan.DeploymentAvailable(d),
			moves:      moving[schedulingv1alpha1.LabelProfile][d.Labels[schedulingv1alpha1.LabelProfile]] || moving[schedulingv1alpha1.LabelScheduler][d.Labels[schedulingv1alpha1.LabelScheduler]],
			heldChange: held[d.Labels[schedulingv1alpha1.LabelProfile]],
			rolledBack: d.Annotations[schedulingv1alpha1.AnnotationImageRolledBack],
		})
	}
	return planUpgrade(proc.Names.Deployment(), r.Settings.Image, members, r.upgradeMaxInFlight), nil
}

// movingOwners are the owners whose scheduler Deployment a pass rolls to a new template, by
// owner label and name: the dedicated profiles with a valid configuration and the Schedulers
// whose rollout is not refused, none being deleted. An owner that cannot move takes no turn in
// the wave and holds none. held are the dedicated profiles whose change their preview holds.
func (r *processObjects) movingOwners(ctx context.Context) (moving map[string]map[string]bool, held map[string]bool, err error) {
	var profiles schedulingv1alpha1.SchedulerProfileList
	if err := r.client.List(ctx, &profiles, client.UnsafeDisableDeepCopy); err != nil { // only read
		return nil, nil, fmt.Errorf("listing SchedulerProfiles: %w", err)
	}
	var schedulers schedulingv1alpha1.SchedulerList
	if err := r.client.List(ctx, &schedulers, client.UnsafeDisableDeepCopy); err != nil { // only read
		return nil, nil, fmt.Errorf("listing Schedulers: %w", err)
	}
	moving, held = map[string]map[string]bool{schedulingv1alpha1.LabelProfile: {}, schedulingv1alpha1.LabelScheduler: {}}, map[string]bool{}
	for i := range profiles.Items {
		p := &profiles.Items[i]
		moving[schedulingv1alpha1.LabelProfile][p.Name] = ownerMoves(p)
		held[p.Name] = p.DeletionTimestamp == nil && p.Spec.SchedulerRef.Name == "" && previewHeld(p.Status.Conditions)
	}
	for i := range schedulers.Items {
		moving[schedulingv1alpha1.LabelScheduler][schedulers.Items[i].Name] = ownerMoves(&schedulers.Items[i])
	}
	return moving, held, nil
}

// ownerMoves tells whether a pass rolls the owner's scheduler Deployment to a new template: a
// dedicated profile with a valid configuration whose change its preview does not hold, or a
// Scheduler whose rollout is not refused, not being deleted. A held profile's own pass moves its
// running template to the new image (runHeld) but takes no turn from the others: its change may
// stay held for good.
func ownerMoves(obj client.Object) bool {
	switch o := obj.(type) {
	case *schedulingv1alpha1.SchedulerProfile:
		return o.DeletionTimestamp == nil && o.Spec.SchedulerRef.Name == "" &&
			!meta.IsStatusConditionFalse(o.Status.Conditions, schedulingv1alpha1.ConditionConfigValid) &&
			!previewHeld(o.Status.Conditions)
	case *schedulingv1alpha1.Scheduler:
		return o.DeletionTimestamp == nil && !rolloutRefused(o.Status.Conditions)
	}
	return false
}

// previewHeld tells whether a profile's status says that its preview holds its change.
func previewHeld(conds []metav1.Condition) bool {
	c := meta.FindStatusCondition(conds, schedulingv1alpha1.ConditionProgressing)
	return c != nil && (c.Reason == schedulingv1alpha1.ReasonPreviewRefused || c.Reason == schedulingv1alpha1.ReasonPreviewRunning)
}

// runHeld is the pass of a profile whose change its preview holds: when the wave gives it its
// turn, its running template moves to the operator's scheduler image, the template the live
// Deployment runs with only the scheduler container's image changed, so that nothing of the held
// change rolls out and an operator upgrade leaves no scheduler behind. That rollout is judged as
// any other: one that fails is rolled back, which stops the wave. A template on the lease of an
// operator version before the prefix stays as it is: its move is part of a rollout. It returns
// the live Deployment and the rollout state, with the wave's step, which the status reports.
func (r *processObjects) runHeld(ctx context.Context, proc *plan.Process, live *appsv1.Deployment, st rolloutState) (*appsv1.Deployment, rolloutState, error) {
	if live == nil || !leased(live.Spec.Template.Annotations) {
		return live, st, nil
	}
	if !r.upgraded(live) {
		defer r.lockUpgrade(live)()
		var err error
		if st.upgrade, err = r.upgradeStepOf(ctx, proc); err != nil || st.upgrade.held != "" || st.upgrade.image != r.Settings.Image {
			return live, st, err
		}
		d := deploy.DeploymentWith(proc, r.Settings, templateOnImage(&live.Spec.Template, r.Settings.Image))
		stampApplied(d, live, time.Now())
		oneLeaderStrategy(proc, d, live)
		if err := r.applyAll(ctx, []deploy.Owned{newOwned(proc, d, &appsv1.Deployment{}, appsv1ac.ExtractDeployment)}); err != nil {
			return live, st, err
		}
		if live, err = r.cachedTemplate(ctx, proc, d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]); err != nil || live == nil {
			return live, st, err
		}
	}
	revision := live.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]
	var err error
	if st, err = r.judgeRollout(ctx, proc, live, st); err != nil || st.failed != revision {
		return live, st, err
	}
	rollback, refused, err := r.rollbackDeployment(ctx, proc, st.lastAvailable, live, schedulerImageOf(live))
	if err != nil || rollback == nil {
		st.rollbackRefused = refused
		return live, st, err
	}
	if err := r.applyAll(ctx, []deploy.Owned{*rollback}); err != nil {
		return live, st, err
	}
	live, err = r.LiveDeployment(ctx, proc)
	return live, st, err
}

// cacheWait bounds how long a pass of the wave waits for the cache to hold what it applied.
const cacheWait = 2 * time.Second

// cachedTemplate reads the process's Deployment from the cache once it runs the template revision
// applied just now, or after cacheWait as it is: the next pass of the wave, once upgradeMu is
// released, counts this scheduler in flight only if the cache shows its move.
func (r *processObjects) cachedTemplate(ctx context.Context, proc *plan.Process, revision string) (*appsv1.Deployment, error) {
	var live *appsv1.Deployment
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, cacheWait, true, func(ctx context.Context) (bool, error) {
		var err error
		live, err = r.LiveDeployment(ctx, proc)
		return err != nil || live == nil || live.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision] == revision, err
	})
	if wait.Interrupted(err) {
		return live, nil
	}
	return live, err
}

// templateOnImage is a live pod template as the operator applies it, with the scheduler
// container's image changed to image and the revision annotation of the new template.
func templateOnImage(live *corev1.PodTemplateSpec, image string) *corev1ac.PodTemplateSpecApplyConfiguration {
	t := live.DeepCopy()
	delete(t.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(t.Annotations, schedulingv1alpha1.AnnotationRevision)
	for i := range t.Spec.Containers {
		if t.Spec.Containers[i].Name == deploy.SchedulerContainer {
			t.Spec.Containers[i].Image = image
		}
	}
	out := corev1ac.PodTemplateSpec()
	deploy.MustConvert(t, out)
	out.WithAnnotations(map[string]string{schedulingv1alpha1.AnnotationRevision: deploy.Revision(out)})
	return out
}

// refusedRollouts are the reasons of a Scheduler's Degraded condition that mean no new template
// is applied until someone fixes something: its settings, Secrets, the cluster's APIs or version.
var refusedRollouts = []string{
	schedulingv1alpha1.ReasonInvalidConfigNotRolledOut, schedulingv1alpha1.ReasonSecretNotFound,
	schedulingv1alpha1.ReasonSecretInvalid, schedulingv1alpha1.ReasonRequiredAPIUnavailable,
	schedulingv1alpha1.ReasonVersionSkew,
}

// rolloutRefused tells whether a Scheduler's status says its rollouts are refused.
func rolloutRefused(conds []metav1.Condition) bool {
	c := meta.FindStatusCondition(conds, schedulingv1alpha1.ConditionDegraded)
	return c != nil && c.Status == metav1.ConditionTrue && slices.Contains(refusedRollouts, c.Reason)
}

// upgraded tells whether a scheduler Deployment has what the operator gives every template: its
// scheduler image and a prefixed lease. One that has not is in the upgrade wave.
func (r *processObjects) upgraded(d *appsv1.Deployment) bool {
	return upgradedTo(r.Settings.Image, d)
}

// upgradedTo tells whether a scheduler Deployment has the scheduler image and a prefixed lease.
func upgradedTo(image string, d *appsv1.Deployment) bool {
	return schedulerImageOf(d) == image && leased(d.Spec.Template.Annotations)
}

// keepLease is the process and configuration of a pass that the step holds on the legacy lease:
// the template keeps no schedulingv1alpha1.AnnotationLease, and the configuration that lease. Otherwise they are
// proc and cfg.
func (u upgradeStep) keepLease(proc *plan.Process, cfg *profile.Config) (*plan.Process, *profile.Config, error) {
	if !u.legacyLease {
		return proc, cfg, nil
	}
	legacy, err := cfg.OnLease(proc.LegacyLease)
	if err != nil {
		return nil, nil, err
	}
	held := *proc
	held.OnLegacyLease = true
	return &held, legacy, nil
}

// leased tells whether a pod template runs on a prefixed lease: one of an operator version before
// profile.LeasePrefix has no schedulingv1alpha1.AnnotationLease.
func leased(annotations map[string]string) bool {
	_, ok := annotations[schedulingv1alpha1.AnnotationLease]
	return ok
}

// schedulerImageOf is the image of the scheduler container of a Deployment's template.
func schedulerImageOf(d *appsv1.Deployment) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == deploy.SchedulerContainer {
			return c.Image
		}
	}
	return ""
}

// desiredImageOf is the image of the scheduler container of a desired Deployment.
func desiredImageOf(d *appsv1ac.DeploymentApplyConfiguration) string {
	if d == nil || d.Spec == nil || d.Spec.Template == nil || d.Spec.Template.Spec == nil {
		return ""
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != nil && *c.Name == deploy.SchedulerContainer && c.Image != nil {
			return *c.Image
		}
	}
	return ""
}

// markImageRollback records on a rollback's Deployment the image it returns from, when the rollback
// changes the image or returns to the legacy lease: the wave of that image stops. The mark stays
// while the operator's image is that one (carryImageRollback), and goes with the next apply once
// the operator's image changes.
func markImageRollback(rollback *appsv1ac.DeploymentApplyConfiguration, failedImage string) {
	if failedImage != "" && (failedImage != desiredImageOf(rollback) || !leased(rollback.Spec.Template.Annotations)) {
		rollback.WithAnnotations(map[string]string{schedulingv1alpha1.AnnotationImageRolledBack: failedImage})
	}
}

// carryImageRollback keeps the mark of a rollback from the operator's current image on the
// Deployment, so that the wave of that image stays stopped.
func carryImageRollback(desired *appsv1ac.DeploymentApplyConfiguration, live *appsv1.Deployment, image string) {
	if live != nil && live.Annotations[schedulingv1alpha1.AnnotationImageRolledBack] == image {
		desired.WithAnnotations(map[string]string{schedulingv1alpha1.AnnotationImageRolledBack: image})
	}
}

// enqueueHeldSchedulers enqueues, on an event of a scheduler Deployment, the owners of ownerLabel
// whose Deployment is not on the operator's image or lease: one may have its turn now.
func (r *processObjects) enqueueHeldSchedulers(ownerLabel string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		if obj.GetLabels()[plan.LabelManagedBy] != schedulingv1alpha1.FieldManager {
			return nil
		}
		return r.heldOwners(ctx, ownerLabel)
	})
}

// enqueueHeldOwners enqueues, when a profile or Scheduler starts or stops taking part in the wave
// (waveTurnChanged), the held owners of ownerLabel: a refused owner no longer holds a turn.
func (r *processObjects) enqueueHeldOwners(ownerLabel string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return r.heldOwners(ctx, ownerLabel)
	})
}

// heldOwners are the owners of ownerLabel whose Deployment is not on the operator's image or lease.
func (r *processObjects) heldOwners(ctx context.Context, ownerLabel string) []reconcile.Request {
	var list appsv1.DeploymentList
	if err := r.client.List(ctx, &list, client.InNamespace(r.Settings.Namespace), client.HasLabels{ownerLabel},
		client.MatchingFields{plan.IndexHeld: plan.IndexValue}, client.UnsafeDisableDeepCopy); err != nil { // only read
		log.FromContext(ctx).Error(err, "Listing scheduler Deployments")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: list.Items[i].Labels[ownerLabel]}})
	}
	return reqs
}

// waveTurnChanged passes the events of a profile or Scheduler whose part in the wave changes:
// it was deleted, or ownerMoves changed.
var waveTurnChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(e event.UpdateEvent) bool { return ownerMoves(e.ObjectOld) != ownerMoves(e.ObjectNew) },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// upgradeStopped returns the Progressing condition of after when it newly says that the
// upgrade wave stopped: the transition that an event and schedops_upgrade_stops_total announce.
func upgradeStopped(before, after []metav1.Condition) (*metav1.Condition, bool) {
	a := meta.FindStatusCondition(after, schedulingv1alpha1.ConditionProgressing)
	if a == nil || a.Reason != schedulingv1alpha1.ReasonUpgradeStopped {
		return nil, false
	}
	b := meta.FindStatusCondition(before, schedulingv1alpha1.ConditionProgressing)
	return a, b == nil || b.Reason != schedulingv1alpha1.ReasonUpgradeStopped
}
