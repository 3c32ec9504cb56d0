package plan

// Labels of the objects the operator manages that follow Kubernetes' recommended labels.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelComponent = "app.kubernetes.io/component"
)

// Where the scheduler container finds its configuration: the volume of the ConfigMap that holds
// it, and the ConfigMap's key.
const (
	ConfigVolume  = "config"
	ConfigFileKey = "config.yaml"
)
