package core

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/deploy"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// pruneConfigMaps deletes the process's ConfigMaps that neither the current configuration nor any
// ReplicaSet of its Deployment uses, but keeps the newest deploy.KeptConfigMaps of those for rollbacks.
func (r *processObjects) pruneConfigMaps(ctx context.Context, proc *plan.Process, currentHash string) error {
	inNamespace := client.InNamespace(r.Settings.Namespace)
	ofProfile := ownedBy(proc)
	var cms corev1.ConfigMapList
	if err := r.client.List(ctx, &cms, inNamespace, ofProfile); err != nil {
		return fmt.Errorf("listing ConfigMaps: %w", err)
	}
	var rss appsv1.ReplicaSetList
	if err := r.client.List(ctx, &rss, inNamespace, ofProfile); err != nil {
		return fmt.Errorf("listing ReplicaSets: %w", err)
	}
	for _, cm := range unusedConfigMaps(proc, cms.Items, rss.Items, currentHash) {
		if err := r.client.Delete(ctx, &cm, client.Preconditions{UID: &cm.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting ConfigMap %s: %w", cm.Name, err)
		}
		log.FromContext(ctx).Info("Deleted unused configuration", "ConfigMap", klog.KObj(&cm))
	}
	return nil
}

// unusedConfigMaps picks the ConfigMaps to delete: owned by the process, not the current one,
// not mounted by a ReplicaSet, and older than the newest deploy.KeptConfigMaps such ones.
func unusedConfigMaps(proc *plan.Process, cms []corev1.ConfigMap, rss []appsv1.ReplicaSet, currentHash string) []corev1.ConfigMap {
	used := map[string]bool{proc.Names.ConfigMap(currentHash): true}
	for _, rs := range rss {
		for _, v := range rs.Spec.Template.Spec.Volumes {
			if v.ConfigMap != nil {
				used[v.ConfigMap.Name] = true
			}
		}
	}
	var unused []corev1.ConfigMap
	for _, cm := range cms {
		if !used[cm.Name] && metav1.IsControlledBy(&cm, proc.Owner) {
			unused = append(unused, cm)
		}
	}
	// Newest first: by the generation that rendered it, then by creation; the name breaks ties so
	// that the choice is stable.
	slices.SortFunc(unused, func(a, b corev1.ConfigMap) int {
		if c := cmp.Compare(generation(b), generation(a)); c != 0 {
			return c
		}
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if len(unused) <= deploy.KeptConfigMaps {
		return nil
	}
	return unused[deploy.KeptConfigMaps:]
}

// generation is the owner generation a ConfigMap was rendered for; 0 if unknown.
func generation(cm corev1.ConfigMap) int64 {
	g, _ := strconv.ParseInt(cm.Labels[schedulingv1alpha1.LabelGeneration], 10, 64)
	return g
}
