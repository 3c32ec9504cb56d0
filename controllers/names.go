package controllers

// Labels of the objects the operator manages that follow Kubernetes' recommended labels.
const (
	labelName      = "app.kubernetes.io/name"
	labelInstance  = "app.kubernetes.io/instance"
	labelManagedBy = "app.kubernetes.io/managed-by"
	labelComponent = "app.kubernetes.io/component"
)

// Bootstrap roles that a kube-scheduler needs, bound rather than copied so they follow the
// cluster's Kubernetes version.
const (
	kubeSchedulerClusterRole   = "system:kube-scheduler"
	volumeSchedulerClusterRole = "system:volume-scheduler"
	authReaderRole             = "extension-apiserver-authentication-reader"
	authReaderNamespace        = "kube-system"
)
