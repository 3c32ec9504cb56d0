package controllers

import (
	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// Label and annotation keys of the objects the operator manages.
const (
	// LabelProfile names the SchedulerProfile an object belongs to; the operator selects its
	// ConfigMaps and ReplicaSets by it.
	LabelProfile = "scheduling.schedops.io/profile"
	// LabelConfigHash is the config hash of a ConfigMap.
	LabelConfigHash = "scheduling.schedops.io/config-hash"
	// LabelGeneration is the profile generation that last rendered a ConfigMap: pruning keeps
	// the newest, which creation timestamps (to the second) cannot always tell apart.
	LabelGeneration = "scheduling.schedops.io/profile-generation"
	// AnnotationConfigHash is the config hash on the scheduler's pod template: a new config is a
	// new template, so a rolling update; the same config is no update at all.
	AnnotationConfigHash = "scheduling.schedops.io/config-hash"

	labelName      = "app.kubernetes.io/name"
	labelInstance  = "app.kubernetes.io/instance"
	labelManagedBy = "app.kubernetes.io/managed-by"
	labelComponent = "app.kubernetes.io/component"
)

// FieldManager is the one field manager of every server-side apply of the operator.
const FieldManager = "scheduler-profile-operator"

// LeaderElectionID is the operator's own lease; the managed schedulers use leases of their own.
const LeaderElectionID = "scheduler-profile-operator.schedops.io"

// Bootstrap roles that a kube-scheduler needs, bound rather than copied so they follow the
// cluster's Kubernetes version.
const (
	kubeSchedulerClusterRole   = "system:kube-scheduler"
	volumeSchedulerClusterRole = "system:volume-scheduler"
	authReaderRole             = "extension-apiserver-authentication-reader"
	authReaderNamespace        = "kube-system"
)

func deploymentName(p *schedulingv1alpha1.SchedulerProfile) string { return p.Name + "-scheduler" }

func serviceAccountName(p *schedulingv1alpha1.SchedulerProfile) string { return p.Name + "-scheduler" }

func configMapName(p *schedulingv1alpha1.SchedulerProfile, hash string) string {
	return p.Name + "-config-" + hash
}

func leaseRoleName(p *schedulingv1alpha1.SchedulerProfile) string { return p.Name + "-scheduler-lease" }

func clusterRoleBindingName(p *schedulingv1alpha1.SchedulerProfile, role string) string {
	return "scheduler-profile-operator:" + p.Name + ":" + role
}

func authReaderBindingName(p *schedulingv1alpha1.SchedulerProfile) string {
	return "scheduler-profile-operator:" + p.Name + ":authentication-reader"
}

// profileLabels are the labels of every object of a profile.
func profileLabels(p *schedulingv1alpha1.SchedulerProfile) map[string]string {
	return map[string]string{
		labelName:      "kube-scheduler",
		labelInstance:  p.Name,
		labelManagedBy: FieldManager,
		labelComponent: "scheduler",
		LabelProfile:   p.Name,
	}
}

// selectorLabels select the scheduler pods of a profile; they never change, since a
// Deployment's selector is immutable.
func selectorLabels(p *schedulingv1alpha1.SchedulerProfile) map[string]string {
	return map[string]string{labelName: "kube-scheduler", LabelProfile: p.Name}
}
