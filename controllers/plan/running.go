package plan

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// SchedulerMount is the configuration that a scheduler Deployment or pod mounts, with its labels.
type SchedulerMount struct {
	Labels    map[string]string
	ConfigMap string
}

// ServingMounts are the configurations mounted by the scheduler pods of namespace ns, among
// those that match (every one for nil), that schedule pods now (PodServes).
func ServingMounts(ctx context.Context, c client.Reader, ns string, match client.ListOption) ([]SchedulerMount, error) {
	opts := []client.ListOption{client.InNamespace(ns), client.MatchingLabels{LabelName: "kube-scheduler", LabelManagedBy: schedulingv1alpha1.FieldManager},
		client.UnsafeDisableDeepCopy} // only read
	if match != nil {
		opts = append(opts, match)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, opts...); err != nil {
		return nil, fmt.Errorf("listing scheduler pods: %w", err)
	}
	var mounts []SchedulerMount
	for i := range pods.Items {
		if p := &pods.Items[i]; PodServes(p) {
			mounts = append(mounts, SchedulerMount{Labels: p.Labels, ConfigMap: ConfigMapOf(&p.Spec)})
		}
	}
	return mounts, nil
}

// PodServes tells whether a scheduler pod schedules pods now: running, ready, not being deleted.
func PodServes(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ConfigMapOf is the ConfigMap a scheduler pod spec mounts its configuration from.
func ConfigMapOf(spec *corev1.PodSpec) string {
	for _, v := range spec.Volumes {
		if v.Name == ConfigVolume && v.ConfigMap != nil {
			return v.ConfigMap.Name
		}
	}
	return ""
}

// IsSchedulerPod tells whether obj is a scheduler pod of the operator.
func IsSchedulerPod(obj client.Object) bool {
	l := obj.GetLabels()
	return l[LabelName] == "kube-scheduler" && l[LabelManagedBy] == schedulingv1alpha1.FieldManager
}
