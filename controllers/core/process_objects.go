package core

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/schedops/scheduler-profile-operator/controllers/deploy"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// processObjects applies, reads and prunes the objects of scheduler processes; both reconcilers
// use it, so a dedicated and a shared scheduler run the same way.
type processObjects struct {
	client client.Client
	// Planner plans with the same settings, memos and metrics, reading through client.
	plan.Planner
	// rollout decides when a rollout has failed for good; zero fields take the defaults.
	rollout RolloutThresholds
	// upgradeMaxInFlight is how many schedulers a change of the operator's scheduler image
	// rolls at a time (planUpgrade); 0 is DefaultUpgradeMaxInFlight.
	upgradeMaxInFlight int
	// upgradeMu serializes the passes that may move a scheduler to the operator's new image
	// (lockUpgrade): the wave counts the schedulers in flight (planUpgrade) before it applies,
	// and two passes at once would each see the same free slot. Other passes run in parallel: a
	// profile is never in two passes at once (the controller's queue), each pass reads what it
	// decides from the cluster, and the memos are safe for concurrent use. Shared by every
	// processObjects built from the operator's one; nil locks nothing.
	upgradeMu *sync.Mutex
}

// run applies the objects of a process with a valid configuration, removes what it no longer
// needs, follows the rollout, and returns its live Deployment. A revision whose rollout failed is
// not applied again: the Deployment stays on (or returns to) the last revision that ran available.
func (r *processObjects) run(ctx context.Context, proc *plan.Process, cfg *profile.Config, st rolloutState) (*appsv1.Deployment, rolloutState, error) {
	live, err := r.LiveDeployment(ctx, proc)
	if err != nil {
		return nil, st, err
	}
	if st.upgrade, err = r.upgradeStepOf(ctx, proc); err != nil {
		return nil, st, err
	}
	if proc, cfg, err = st.upgrade.keepLease(proc, cfg); err != nil {
		return nil, st, err
	}
	st.upgrade.config = cfg
	if proc.GrantLegacy, err = r.mayRunLegacyLease(ctx, proc, live, st); err != nil {
		return nil, st, err
	}
	objs := r.desiredObjects(proc, cfg, st.upgrade.image)
	last := len(objs) - 1
	desired := objs[last].Desired.(*appsv1ac.DeploymentApplyConfiguration)
	stampApplied(desired, live, time.Now())
	oneLeaderStrategy(proc, desired, live)
	carryImageRollback(desired, live, r.Settings.Image)
	revision := desired.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]
	if revision == st.failed {
		rollback, refused, err := r.rollbackDeployment(ctx, proc, st.lastAvailable, live, desiredImageOf(desired))
		if err != nil {
			return nil, st, err
		}
		st.rollbackRefused = refused
		objs = objs[:last]
		if rollback != nil {
			objs = append(objs, *rollback)
		}
	} else if !st.upgrade.stopped {
		// A failed revision blocks only the spec that asks for it: any other revision, one that
		// ran before included, rolls out. While the upgrade wave that a failed new image
		// stopped holds the image, the failure stays on record (Degraded, RolloutFailed): the
		// scheduler asks for the old image then, not for another spec.
		st.failed, st.cause, st.rollbackRefused = "", "", ""
	}
	if err := r.applyAll(ctx, objs); err != nil {
		return nil, st, err
	}
	if err := r.deleteUnwantedPDB(ctx, proc); err != nil {
		return nil, st, err
	}
	if err := r.pruneConfigMaps(ctx, proc, cfg.Hash); err != nil {
		return nil, st, err
	}
	d, err := r.LiveDeployment(ctx, proc)
	if applied, ok := objs[len(objs)-1].Desired.(*appsv1ac.DeploymentApplyConfiguration); ok && err == nil && live != nil && !r.upgraded(live) {
		// In the wave (upgradeMu held): the next pass counts this one in flight from the cache.
		d, err = r.cachedTemplate(ctx, proc, applied.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision])
	}
	if err != nil {
		return nil, st, err
	}
	if st, err = r.judgeRollout(ctx, proc, d, st); err != nil || st.failed != revision || d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision] != revision {
		return d, st, err
	}
	// The rollout of this revision failed just now: return to the last available one at once.
	rollback, refused, err := r.rollbackDeployment(ctx, proc, st.lastAvailable, d, desiredImageOf(desired))
	if err != nil || rollback == nil {
		st.rollbackRefused = refused
		return d, st, err
	}
	if err := r.applyAll(ctx, []deploy.Owned{*rollback}); err != nil {
		return d, st, err
	}
	d, err = r.LiveDeployment(ctx, proc)
	return d, st, err
}

// desiredObjects are the objects of a process with a valid configuration, the ConfigMap before
// the Deployment that mounts it, whose scheduler runs image.
func (r *processObjects) desiredObjects(proc *plan.Process, cfg *profile.Config, image string) []deploy.Owned {
	s := r.Settings
	s.Image = image
	objs := []deploy.Owned{
		newOwned(proc, deploy.ServiceAccount(proc, s), &corev1.ServiceAccount{}, corev1ac.ExtractServiceAccount),
		newOwned(proc, deploy.ClusterRoleBinding(proc, s, deploy.KubeSchedulerClusterRole), &rbacv1.ClusterRoleBinding{}, rbacv1ac.ExtractClusterRoleBinding),
		newOwned(proc, deploy.ClusterRoleBinding(proc, s, deploy.VolumeSchedulerClusterRole), &rbacv1.ClusterRoleBinding{}, rbacv1ac.ExtractClusterRoleBinding),
		newOwned(proc, deploy.AuthReaderRoleBinding(proc, s), &rbacv1.RoleBinding{}, rbacv1ac.ExtractRoleBinding),
		newOwned(proc, deploy.LeaseRole(proc, s), &rbacv1.Role{}, rbacv1ac.ExtractRole),
		newOwned(proc, deploy.LeaseRoleBinding(proc, s), &rbacv1.RoleBinding{}, rbacv1ac.ExtractRoleBinding),
		newOwned(proc, deploy.ConfigMap(proc, s, cfg), &corev1.ConfigMap{}, corev1ac.ExtractConfigMap),
		newOwned(proc, deploy.Service(proc, s), &corev1.Service{}, corev1ac.ExtractService),
	}
	if plan.Replicas(proc.Run.Replicas) > 1 {
		objs = append(objs, newOwned(proc, deploy.PodDisruptionBudget(proc, s), &policyv1.PodDisruptionBudget{}, policyv1ac.ExtractPodDisruptionBudget))
	}
	return append(objs, newOwned(proc, deploy.Deployment(proc, s, cfg), &appsv1.Deployment{}, appsv1ac.ExtractDeployment))
}

// applyAll applies objs in waves, each once the one before it is done: every object that needs
// no other of the pass at once; then the RoleBindings of a Role of the pass (the apiserver's
// escalation check reads the Role, and refuses to bind one it cannot find); then the last (the
// process's Deployment), once what its pods need (the configuration, the ServiceAccount and its
// bindings) is there. A pass waits for the apiserver three times, not once per object: 1000 new
// profiles settled in 19.8 to 21.7 s instead of 23.6 to 25.7 s. Every apply of a wave runs to
// its end even when another fails, so that a failure cannot keep an object the next pass needs
// from being made.
//
// An apply decodes the apiserver's answer into its configuration, so that applies at once are
// safe only because no configuration shares a map with another or with the builders' inputs
// (TestAppliedObjectsShareNoMaps).
func (r *processObjects) applyAll(ctx context.Context, objs []deploy.Owned) error {
	for _, wave := range applyWaves(objs) {
		var g errgroup.Group
		for _, o := range wave {
			g.Go(func() error { return r.applyLogged(ctx, o) })
		}
		if err := g.Wait(); err != nil {
			return err
		}
	}
	return nil
}

// applyWaves splits objs into the waves of applyAll: the independent ones, the RoleBindings of a
// Role among objs, and the last object.
func applyWaves(objs []deploy.Owned) [][]deploy.Owned {
	if len(objs) == 0 {
		return nil
	}
	last := len(objs) - 1
	roles := map[client.ObjectKey]bool{}
	for _, o := range objs[:last] {
		if _, ok := o.Desired.(*rbacv1ac.RoleApplyConfiguration); ok {
			roles[o.Key] = true
		}
	}
	var independent, bindings []deploy.Owned
	for _, o := range objs[:last] {
		if rb, ok := o.Desired.(*rbacv1ac.RoleBindingApplyConfiguration); ok && rb.RoleRef != nil &&
			ptr.Deref(rb.RoleRef.Kind, "") == "Role" && roles[client.ObjectKey{Namespace: o.Key.Namespace, Name: ptr.Deref(rb.RoleRef.Name, "")}] {
			bindings = append(bindings, o)
			continue
		}
		independent = append(independent, o)
	}
	var waves [][]deploy.Owned
	for _, w := range [][]deploy.Owned{independent, bindings, objs[last:]} {
		if len(w) > 0 {
			waves = append(waves, w)
		}
	}
	return waves
}

// applyLogged applies o and logs it when it changed.
func (r *processObjects) applyLogged(ctx context.Context, o deploy.Owned) error {
	changed, err := r.apply(ctx, o)
	if changed {
		log.FromContext(ctx).V(1).Info("Applied", "kind", kindOf(o.Observed), "object", klog.KRef(o.Key.Namespace, o.Key.Name))
	}
	return err
}

// kindOf names the kind of a typed object, for log keys ("Deployment").
func kindOf(obj client.Object) string {
	return reflect.TypeOf(obj).Elem().Name()
}

// deleteUnwantedPDB removes the PodDisruptionBudget of a process scaled down to one replica.
func (r *processObjects) deleteUnwantedPDB(ctx context.Context, proc *plan.Process) error {
	if plan.Replicas(proc.Run.Replicas) > 1 {
		return nil
	}
	pdb := &policyv1.PodDisruptionBudget{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: r.Settings.Namespace, Name: proc.Names.Deployment()}, pdb)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the PodDisruptionBudget: %w", err)
	}
	if !metav1.IsControlledBy(pdb, proc.Owner) {
		return nil
	}
	if err := r.client.Delete(ctx, pdb); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the PodDisruptionBudget: %w", err)
	}
	return nil
}

// removeProcess deletes the objects of a process that its owner still controls, the Deployment
// first: a profile that joined a Scheduler, once the Scheduler serves it, needs no scheduler of
// its own. Objects already gone are skipped, so a later pass writes nothing.
func (r *processObjects) removeProcess(ctx context.Context, proc *plan.Process) error {
	ns := r.Settings.Namespace
	at := func(namespace, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: namespace, Name: name}
	}
	objs := []client.Object{
		&appsv1.Deployment{ObjectMeta: at(ns, proc.Names.Deployment())},
		&policyv1.PodDisruptionBudget{ObjectMeta: at(ns, proc.Names.Deployment())},
		&corev1.ServiceAccount{ObjectMeta: at(ns, proc.Names.ServiceAccount())},
		&corev1.Service{ObjectMeta: at(ns, proc.Names.Service())},
		&rbacv1.Role{ObjectMeta: at(ns, proc.Names.LeaseRole())},
		&rbacv1.RoleBinding{ObjectMeta: at(ns, proc.Names.LeaseRole())},
		&rbacv1.RoleBinding{ObjectMeta: at(deploy.AuthReaderNamespace, proc.Names.AuthReaderBinding())},
		&rbacv1.ClusterRoleBinding{ObjectMeta: at("", proc.Names.ClusterRoleBinding(deploy.KubeSchedulerClusterRole[len("system:"):]))},
		&rbacv1.ClusterRoleBinding{ObjectMeta: at("", proc.Names.ClusterRoleBinding(deploy.VolumeSchedulerClusterRole[len("system:"):]))},
	}
	var cms corev1.ConfigMapList
	if err := r.client.List(ctx, &cms, client.InNamespace(ns), ownedBy(proc)); err != nil {
		return fmt.Errorf("listing ConfigMaps: %w", err)
	}
	for i := range cms.Items {
		objs = append(objs, &cms.Items[i])
	}
	for _, obj := range objs {
		if err := r.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("reading %s %s: %w", kindOf(obj), client.ObjectKeyFromObject(obj), err)
		}
		if !metav1.IsControlledBy(obj, proc.Owner) {
			continue
		}
		if err := r.client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s %s: %w", kindOf(obj), client.ObjectKeyFromObject(obj), err)
		}
		log.FromContext(ctx).Info("Deleted the object of a scheduler no longer needed", "kind", kindOf(obj), "object", klog.KObj(obj))
	}
	return nil
}

// ownsProcessObjects watches the kinds of objects a process owns, for the owner's controller: a
// managed object edited or deleted by hand is restored. It also watches the scheduler pods, found
// by the owner label, whose failures decide a rollback.
func ownsProcessObjects(b *builder.Builder, ownerLabel string) *builder.Builder {
	return b.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
			if name := obj.GetLabels()[ownerLabel]; name != "" {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
			}
			return nil
		})).
		Owns(&corev1.ServiceAccount{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.Deployment{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&rbacv1.ClusterRoleBinding{})
}

// judgeRollout follows the rollout of the Deployment's revision (rolloutState.next): a revision
// that runs available becomes the one to return to; one whose rollout failed for good is marked
// failed, and run returns the Deployment to the last available revision.
func (r *processObjects) judgeRollout(ctx context.Context, proc *plan.Process, d *appsv1.Deployment, st rolloutState) (rolloutState, error) {
	if d == nil {
		return st, nil
	}
	o := rolloutObservation{revision: d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision], available: plan.DeploymentAvailable(d)}
	if st.judges(o.revision, o.available) {
		v, err := r.judgeRevision(ctx, proc, d, o.revision)
		if err != nil {
			return st, err
		}
		o.verdict = &v
	}
	return st.next(o), nil
}

// judgeRevision reads the ReplicaSet and pods of the Deployment's revision and judges its
// rollout against the time the operator applied it, never against the ReplicaSet's creation: a
// Deployment reuses the ReplicaSet of a template it ran before.
func (r *processObjects) judgeRevision(ctx context.Context, proc *plan.Process, d *appsv1.Deployment, rev string) (rolloutVerdict, error) {
	applied, ok := appliedAt(d)
	if !ok {
		// The cache has not seen the apply that records it yet; that apply changes the
		// Deployment, so a pass follows anyway.
		return rolloutVerdict{recheckAfter: time.Second}, nil
	}
	inNamespace, selected := client.InNamespace(r.Settings.Namespace), client.MatchingLabels(proc.SelectorLabels())
	var rss appsv1.ReplicaSetList
	if err := r.client.List(ctx, &rss, inNamespace, selected, ownedBy(proc)); err != nil {
		return rolloutVerdict{}, fmt.Errorf("listing ReplicaSets: %w", err)
	}
	var pods []corev1.Pod
	rs := replicaSetOf(rss.Items, rev)
	if rs != nil {
		var list corev1.PodList
		if err := r.client.List(ctx, &list, inNamespace, selected, ownedBy(proc)); err != nil {
			return rolloutVerdict{}, fmt.Errorf("listing pods: %w", err)
		}
		pods = podsOf(rs, list.Items)
	} else {
		// Not created yet by the Deployment controller: no pod to judge, the deadline runs.
		rs = &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: d.Spec.Replicas}}
	}
	th := r.rollout.withDefaults()
	return th.judge(rs, pods, applied, rolloutDeadline(proc, th), time.Now()), nil
}

// rollbackDeployment is the Deployment of a process returned to an earlier revision, with the pod
// template of that revision's ReplicaSet and the time it was applied (that of live while live
// runs it); nil when the ReplicaSet is gone, or when the rollback is refused, and then refused
// says why.
// failedImage is the image of the revision rolled back from; a rollback to another image stops
// the upgrade wave of that image (markImageRollback), and a rollback keeps the mark of an
// earlier one (carryImageRollback).
func (r *processObjects) rollbackDeployment(ctx context.Context, proc *plan.Process, revision string, live *appsv1.Deployment, failedImage string) (rollback *deploy.Owned, refused string, err error) {
	var rss appsv1.ReplicaSetList
	if err := r.client.List(ctx, &rss, client.InNamespace(r.Settings.Namespace), client.MatchingLabels(proc.SelectorLabels()), ownedBy(proc)); err != nil {
		return nil, "", fmt.Errorf("listing ReplicaSets: %w", err)
	}
	rs := replicaSetOf(rss.Items, revision)
	if rs == nil {
		return nil, "", nil
	}
	// The template that live runs already mounts its Secrets: applying it again mounts nothing.
	if live == nil || live.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision] != revision {
		if refused, err := r.unconsentedSecret(ctx, proc, &rs.Spec.Template); err != nil || refused != "" {
			return nil, refused, err
		}
		if refused, err := r.NameTakenBack(ctx, proc, &rs.Spec.Template); err != nil || refused != "" {
			return nil, refused, err
		}
	}
	d := deploy.DeploymentWith(proc, r.Settings, rollbackTemplate(rs))
	stampApplied(d, live, time.Now())
	oneLeaderStrategy(proc, d, live)
	markImageRollback(d, failedImage)
	// A later rollback, of a user's change, keeps the mark that stopped the wave of the
	// operator's image: without it the apply drops the annotation and the image is tried again.
	carryImageRollback(d, live, r.Settings.Image)
	o := newOwned(proc, d, &appsv1.Deployment{}, appsv1ac.ExtractDeployment)
	return &o, "", nil
}

// unconsentedSecret says why the process may not mount a Secret of an earlier pod template
// again, "" when it may: a rollback mounts them as a rollout does, and a Secret's consent may
// have been withdrawn since that template ran (plan.SecretConsent). A Secret that is gone is refused
// too: whatever Secret later takes its name would be mounted unchecked.
func (r *processObjects) unconsentedSecret(ctx context.Context, proc *plan.Process, t *corev1.PodTemplateSpec) (string, error) {
	for _, name := range templateSecrets(t) {
		key := client.ObjectKey{Namespace: r.Settings.Namespace, Name: name}
		secret := &corev1.Secret{}
		if err := r.client.Get(ctx, key, secret); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Sprintf("Secret %s, which that revision mounts, does not exist", key), nil
			}
			return "", fmt.Errorf("reading Secret %s: %w", key, err)
		}
		if why := plan.SecretConsent(secret, proc.SecretUser()); why != "" {
			return fmt.Sprintf("Secret %s, which that revision mounts, %s", key, why), nil
		}
	}
	return "", nil
}

// mayRunLegacyLease tells whether a pod on the process's legacy lease (a template of an operator
// version before profile.LeasePrefix) may still run: the live template uses it, a rollout away
// from it may still have its pods (Recreate not done), or the revision to return to after a
// failed rollout uses it. Until then the lease Role grants it, so that a leader on it keeps its
// lease until it stops.
func (r *processObjects) mayRunLegacyLease(ctx context.Context, proc *plan.Process, live *appsv1.Deployment, st rolloutState) (bool, error) {
	if live == nil {
		return false, nil
	}
	if proc.LeaseOf(live.Spec.Template.Annotations) != proc.LeaseName || live.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return true, nil
	}
	if st.lastAvailable == "" || st.lastAvailable == live.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision] {
		return false, nil
	}
	var rss appsv1.ReplicaSetList
	if err := r.client.List(ctx, &rss, client.InNamespace(r.Settings.Namespace), client.MatchingLabels(proc.SelectorLabels()), ownedBy(proc)); err != nil {
		return false, fmt.Errorf("listing ReplicaSets: %w", err)
	}
	rs := replicaSetOf(rss.Items, st.lastAvailable)
	return rs != nil && proc.LeaseOf(rs.Spec.Template.Annotations) != proc.LeaseName, nil
}
