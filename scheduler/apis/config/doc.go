// Package config holds the internal (unversioned) args types of the out-of-tree scheduler
// plugins. Plugins receive these types; users write the versioned ones in package v1.
//
// +k8s:deepcopy-gen=package
// +groupName=kubescheduler.config.k8s.io
package config
