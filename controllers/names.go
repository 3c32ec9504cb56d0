package controllers

// Labels of the objects the operator manages that follow Kubernetes' recommended labels.
const (
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
