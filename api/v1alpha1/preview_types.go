package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// RolloutSettings set how a change of the profile's configuration rolls out.
type RolloutSettings struct {
	// preview simulates each new configuration against the running one before, or while, it
	// rolls out. A member of a shared Scheduler is previewed on its own entry.
	// +optional
	Preview PreviewSettings `json:"preview,omitzero"`
}

// PreviewMode says what the operator does with a preview of a change.
// +kubebuilder:validation:Enum=Off;Report;Guard
type PreviewMode string

// Preview modes.
const (
	// PreviewOff runs no preview.
	PreviewOff PreviewMode = "Off"
	// PreviewReport previews a change while it rolls out and reports the result in
	// status.preview and an event; the rollout does not wait for it.
	PreviewReport PreviewMode = "Report"
	// PreviewGuard rolls a change out only once its preview leaves at most
	// maxNewlyUnschedulable more of the profile's pods unschedulable than the running
	// configuration does.
	PreviewGuard PreviewMode = "Guard"
)

// PreviewSettings choose whether a change is previewed and whether its preview may stop it.
type PreviewSettings struct {
	// mode is Off, Report or Guard. Defaults to Report.
	// +optional
	Mode PreviewMode `json:"mode,omitempty"`

	// maxNewlyUnschedulable is, in Guard mode, how many more of the profile's pods the new
	// configuration may leave unschedulable than the running one does. Defaults to 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	MaxNewlyUnschedulable *int32 `json:"maxNewlyUnschedulable,omitempty"`
}

// PreviewStatus is the latest preview of a change of the profile's configuration: the
// profile's pods, pending and bound, scheduled in a simulation on a snapshot of the cluster by
// the running configuration and by the new one.
type PreviewStatus struct {
	// from is the running configuration; absent for a profile that ran none.
	// +optional
	From PreviewRun `json:"from,omitzero"`

	// to is the new configuration.
	// +required
	To PreviewRun `json:"to,omitzero"`

	// pods is how many of the profile's pods were simulated; absent when none.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Pods int32 `json:"pods,omitempty"`

	// moved is how many of them the new configuration places on another node than the running
	// one, or leaves unschedulable where it bound them, or the reverse; absent when none.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Moved int32 `json:"moved,omitempty"`

	// newlyUnschedulable are a few of the pods that the new configuration leaves
	// unschedulable and the running one binds, with the scheduler's reason.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5
	NewlyUnschedulable []PreviewPod `json:"newlyUnschedulable,omitempty"`

	// startTime is when the preview started.
	// +optional
	StartTime metav1.Time `json:"startTime,omitzero"`

	// durationMilliseconds is how long the preview took.
	// +optional
	// +kubebuilder:validation:Minimum=1
	DurationMilliseconds int64 `json:"durationMilliseconds,omitempty"`

	// incomplete says which bound cut the preview short: the cap on simulated pods (the first
	// pods in queue order were simulated), or the CPU time or time budget (nothing was decided).
	// Empty when the preview is complete.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Incomplete string `json:"incomplete,omitempty"`

	// failure says why the preview could not run, when it could not.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Failure string `json:"failure,omitempty"`
}

// PreviewRun is what one configuration did in a preview.
type PreviewRun struct {
	// configHash is the configuration's content hash, as status.configHash. For a member of a
	// Scheduler it is the hash of the member's entry rendered as a scheduler of its own with the
	// Scheduler's settings: what the preview simulated.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ConfigHash string `json:"configHash,omitempty"`

	// unschedulable is how many of the pods it left unschedulable; absent when none.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Unschedulable int32 `json:"unschedulable,omitempty"`

	// nodesUsed is how many nodes it placed the pods on; absent when none.
	// +optional
	// +kubebuilder:validation:Minimum=1
	NodesUsed int32 `json:"nodesUsed,omitempty"`
}

// PreviewPod is a pod of a preview and why the scheduler did not bind it.
type PreviewPod struct {
	// pod is namespace/name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Pod string `json:"pod,omitempty"`

	// reason is the scheduler's message.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}
