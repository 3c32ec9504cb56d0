package assignment

import (
	"context"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/projection"
)

// maxRunningRestrictions bounds the restrictions kept by ConfigMap: a few per scheduler.
const maxRunningRestrictions = 256

// runningRestrictions keeps the restrictions of the configurations the schedulers run, by the
// ConfigMap's uid: a rendered ConfigMap is immutable, so it is read once.
type runningRestrictions map[types.UID]map[string]projection.Restriction

// of reads the restrictions of the configuration in a ConfigMap, by scheduler name.
func (m runningRestrictions) of(cm *corev1.ConfigMap) (map[string]projection.Restriction, error) {
	if r, ok := m[cm.UID]; ok {
		return r, nil
	}
	r, err := projection.Of([]byte(cm.Data[plan.ConfigFileKey]))
	if err != nil {
		return nil, fmt.Errorf("reading the node restrictions of ConfigMap %s: %w", cm.Name, err)
	}
	if len(m) >= maxRunningRestrictions {
		clear(m)
	}
	m[cm.UID] = r
	return r, nil
}

// projections are the node restrictions written onto the pods of each served scheduler name:
// those of the configuration its running scheduler pods (podServes) mount, for a profile served
// under it (status.servedSchedulerName) whose spec.projection does not turn them off. A name
// whose running pods disagree (a rollout that changes them, both revisions ready) gets none
// until one revision is left: either might place the pod.
func (r *Reconciler) projections(ctx context.Context, profiles []schedulingv1alpha1.SchedulerProfile) (projectedNames, error) {
	mounts, err := plan.ServingMounts(ctx, r.client, r.namespace, nil)
	if err != nil {
		return nil, err
	}
	byName := map[string]projection.Restriction{}
	mixed := map[string]bool{}
	seen := map[string]bool{}
	for _, m := range mounts {
		cmName := m.ConfigMap
		if cmName == "" || seen[cmName] {
			continue
		}
		seen[cmName] = true
		cm := &corev1.ConfigMap{}
		if err := r.client.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: cmName}, cm); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading ConfigMap %s: %w", cmName, err)
		}
		// A configuration this operator cannot read (one an older release rendered) projects
		// nothing; assignment and access go on.
		restrictions, err := r.restrictions.of(cm)
		if err != nil {
			log.FromContext(ctx).Error(err, "Not projecting the node restrictions of a running configuration")
			continue
		}
		inConfig, err := r.profilesIn(cm)
		if err != nil {
			log.FromContext(ctx).Error(err, "Not projecting the node restrictions of a running configuration")
			continue
		}
		for name := range inConfig {
			got := restrictions[name]
			if prev, ok := byName[name]; ok && !reflect.DeepEqual(prev, got) {
				mixed[name] = true
			}
			byName[name] = got
		}
	}
	out := projectedNames{}
	for i := range profiles {
		p := &profiles[i]
		name := p.Status.ServedSchedulerName
		rs, ok := byName[name]
		switch {
		case name == "" || p.DeletionTimestamp != nil || !p.Spec.Projection.ProjectsNodeRestrictions() || !ok || len(rs.Terms) == 0:
			continue
		case mixed[name]:
			log.FromContext(ctx).Info("The node restrictions of a scheduler name are not projected while its running schedulers disagree on them", "schedulerName", name)
			continue
		}
		out[name] = projected{restriction: rs, note: rs.Note(p.Name)}
	}
	return out, nil
}
