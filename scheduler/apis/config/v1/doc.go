// Package v1 holds the versioned args types of the out-of-tree scheduler plugins, as they are
// written in a kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/schedops/scheduler-profile-operator/scheduler/apis/config
// +k8s:defaulter-gen=TypeMeta
// +groupName=kubescheduler.config.k8s.io
package v1
