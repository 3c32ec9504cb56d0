package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scheduler is one managed kube-scheduler process that serves several SchedulerProfiles: each
// profile whose spec.schedulerRef names it is one entry of the process's profiles. Profiles of one
// Scheduler share its cache and queue, so their decisions never conflict, and each added profile
// costs little memory. The Scheduler holds what upstream keeps per process: how it runs and its
// extenders. Its name must be a DNS-1123 label of at most 40 characters.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=sched,categories=scheduling
// +kubebuilder:printcolumn:name="Profiles",type=integer,JSONPath=`.status.profileCount`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 40",message="metadata.name must be at most 40 characters so that the names derived from it stay valid"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1123 label (lower case letters, digits and '-')"
type Scheduler struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's metadata. The name must be a DNS-1123 label of at most 40 characters;
	// it names the scheduler's Deployment ("<name>.scheduler") and ConfigMaps ("<name>.config-<hash>").
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is how the scheduler process runs.
	// +optional
	Spec SchedulerSpec `json:"spec,omitzero"`

	// status is what the operator observed when it last reconciled this Scheduler.
	// +optional
	Status SchedulerStatus `json:"status,omitzero"`
}

// SchedulerSpec is what kube-scheduler keeps per process: how its Deployment runs, and the extenders
// (KubeSchedulerConfiguration.extenders) that every profile of the process calls.
type SchedulerSpec struct {
	SchedulerSettings `json:",inline"`

	// extenders are HTTP scheduler extenders called by every profile of this scheduler, exactly as in
	// KubeSchedulerConfiguration.extenders. At most one of them may bind.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Extenders []Extender `json:"extenders,omitempty"`
}

// SchedulerStatus is what the operator observed when it last reconciled the Scheduler.
type SchedulerStatus struct {
	// conditions are Available, Progressing and Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation of the spec that the operator last reconciled successfully.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// profiles are the SchedulerProfiles that the running configuration serves, by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	Profiles []SchedulerMember `json:"profiles,omitempty"`

	// profileCount is the number of entries of profiles.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	ProfileCount int32 `json:"profileCount,omitempty"`

	// ProcessStatus names the objects and rollouts of the Scheduler's process.
	ProcessStatus `json:",inline"`
}

// SchedulerMember is one profile that a Scheduler serves.
type SchedulerMember struct {
	// name of the SchedulerProfile.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	Name string `json:"name,omitempty"`

	// schedulerName that pods set to be scheduled by this profile.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	SchedulerName string `json:"schedulerName,omitempty"`
}

// SchedulerList is a list of Schedulers.
//
// +kubebuilder:object:root=true
type SchedulerList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the Schedulers.
	Items []Scheduler `json:"items"`
}
