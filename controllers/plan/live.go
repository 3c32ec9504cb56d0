package plan

import (
	"context"
	"fmt"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LiveDeployment reads the process's Deployment from the cache; nil when there is none.
func (r *Planner) LiveDeployment(ctx context.Context, proc *Process) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: r.Settings.Namespace, Name: proc.Names.Deployment()}, d)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the scheduler Deployment: %w", err)
	}
	return d, nil
}

// RunningConfig reads the ConfigMap that the process's Deployment mounts now; nil when there is
// none.
func (r *Planner) RunningConfig(ctx context.Context, proc *Process, d *appsv1.Deployment) (*corev1.ConfigMap, error) {
	if d == nil {
		return nil, nil
	}
	hash := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash]
	if hash == "" {
		return nil, nil
	}
	cm := &corev1.ConfigMap{}
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: r.Settings.Namespace, Name: proc.Names.ConfigMap(hash)}, cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the running configuration: %w", err)
	}
	return cm, nil
}

// DeploymentAvailable tells whether every replica of the Deployment's current template is available.
func DeploymentAvailable(d *appsv1.Deployment) bool {
	n := Replicas(d.Spec.Replicas)
	return d.Status.ObservedGeneration >= d.Generation &&
		d.Status.UpdatedReplicas == n && d.Status.Replicas == n && d.Status.AvailableReplicas == n
}

// Replicas is a replica count as the API server defaults it: one when unset. It serves both the
// profile's spec and the observed Deployment.
func Replicas(n *int32) int32 { return ptr.Deref(n, 1) }
