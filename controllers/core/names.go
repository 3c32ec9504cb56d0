package core

// Bootstrap roles that a kube-scheduler needs, bound rather than copied so they follow the
// cluster's Kubernetes version.
const (
	kubeSchedulerClusterRole   = "system:kube-scheduler"
	volumeSchedulerClusterRole = "system:volume-scheduler"
	authReaderRole             = "extension-apiserver-authentication-reader"
	authReaderNamespace        = "kube-system"
)
