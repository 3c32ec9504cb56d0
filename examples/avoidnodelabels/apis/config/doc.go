// Package config holds the internal args type of the AvoidNodeLabels plugin: what the plugin's
// New receives, once kube-scheduler decoded, defaulted and converted the versioned args.
//
// +k8s:deepcopy-gen=package
// +groupName=kubescheduler.config.k8s.io
package config
