// Package v1 holds the versioned args type of the AvoidNodeLabels plugin, as profiles write it
// (kubescheduler.config.k8s.io/v1, kind AvoidNodeLabelsArgs), with its defaults.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/schedops/scheduler-profile-operator/examples/avoidnodelabels/apis/config
// +k8s:defaulter-gen=TypeMeta
// +groupName=kubescheduler.config.k8s.io
package v1
