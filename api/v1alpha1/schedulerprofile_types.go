package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// MaxProfileNameLength bounds metadata.name so that every object derived from it,
// "<name>-scheduler" and "<name>-config-<10-character hash>", stays a valid DNS-1123 label
// and label value (63 characters).
const MaxProfileNameLength = 40

// DefaultSchedulerName is the scheduler name of the cluster's own kube-scheduler; a profile may never claim it.
const DefaultSchedulerName = "default-scheduler"

// SchedulerProfile is a kube-scheduler profile that the operator validates and runs as its own
// scheduler Deployment. Pods choose it with spec.schedulerName. Its name must be a DNS-1123 label of
// at most 40 characters, because the names of the objects derived from it must stay valid.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=sp,categories=scheduling
// +kubebuilder:printcolumn:name="Scheduler",type=string,JSONPath=`.status.schedulerName`
// +kubebuilder:printcolumn:name="Served",type=string,JSONPath=`.status.servedSchedulerName`,priority=1
// +kubebuilder:printcolumn:name="Shared",type=string,JSONPath=`.spec.schedulerRef.name`,priority=1
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="ConfigValid")].status`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Namespaces",type=integer,JSONPath=`.status.assignedNamespaces.count`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 40",message="metadata.name must be at most 40 characters so that the names derived from it stay valid"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1123 label (lower case letters, digits and '-'), because it is the default schedulerName"
// +kubebuilder:validation:XValidation:rule="(has(self.spec) && has(self.spec.schedulerName)) || self.metadata.name != 'default-scheduler'",message="a profile named default-scheduler must set spec.schedulerName to another name: default-scheduler belongs to the cluster's own scheduler"
// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.schedulerRef) || (!has(self.spec.scheduler) && !has(self.spec.extenders))",message="a profile with spec.schedulerRef runs in that Scheduler's process: set replicas, resources, placement, log verbosity and extenders on the Scheduler, not in spec.scheduler or spec.extenders"
type SchedulerProfile struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's metadata. The name must be a DNS-1123 label of at most 40 characters;
	// it names the scheduler's Deployment ("<name>-scheduler") and ConfigMaps ("<name>-config-<hash>").
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the scheduling profile and how its scheduler runs.
	// +optional
	Spec SchedulerProfileSpec `json:"spec,omitzero"`

	// status is what the operator observed when it last reconciled this profile.
	// +optional
	Status SchedulerProfileStatus `json:"status,omitzero"`
}

// SchedulerProfileSpec is one kube-scheduler profile (the fields of KubeSchedulerProfile and the
// extenders of KubeSchedulerConfiguration, kubescheduler.config.k8s.io/v1) plus how its scheduler runs.
type SchedulerProfileSpec struct {
	// schedulerName is the name that pods set in spec.schedulerName to be scheduled by this profile.
	// Defaults to metadata.name. It must be a DNS-1123 label, must not be "default-scheduler", and must
	// not be claimed by another SchedulerProfile (the older profile keeps it). The scheduler's
	// leader-election lease is named after it, with the prefix "schedops-" (schedops-<schedulerName>).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'default-scheduler'",message="schedulerName must not be default-scheduler: that name belongs to the cluster's own scheduler"
	SchedulerName string `json:"schedulerName,omitempty"`

	// percentageOfNodesToScore is the percentage of all nodes that, once found feasible for a pod,
	// stops the search for more feasible nodes. 0 or unset uses the scheduler's adaptive default
	// (5%-50% depending on cluster size).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	PercentageOfNodesToScore *int32 `json:"percentageOfNodesToScore,omitempty"`

	// plugins enables and disables plugins per extension point, exactly as in KubeSchedulerProfile.
	// An extension point that is not set keeps the default plugins. Plugin names are checked against
	// the plugins compiled into the managed scheduler; an unknown name makes the profile invalid.
	// +optional
	Plugins *Plugins `json:"plugins,omitempty"`

	// pluginConfig gives arguments to plugins, exactly as in KubeSchedulerProfile: the args of plugin
	// "X" are decoded strictly as kind "XArgs", so an unknown field makes the profile invalid.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	PluginConfig []PluginConfig `json:"pluginConfig,omitempty"`

	// extenders are HTTP scheduler extenders called by this scheduler, exactly as in
	// KubeSchedulerConfiguration.extenders. At most one of them may bind.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Extenders []Extender `json:"extenders,omitempty"`

	// scheduler sets how the managed scheduler Deployment runs. The image is not configurable here:
	// it is the operator's scheduler image, so that a profile author cannot run other code with the
	// scheduler's cluster-wide permissions. Not allowed with schedulerRef: a shared process is
	// set up on its Scheduler.
	// +optional
	Scheduler SchedulerSettings `json:"scheduler,omitzero"`

	// schedulerRef makes this profile one of the profiles of a shared Scheduler process instead of
	// running a scheduler of its own. Profiles of one Scheduler share its cache and queue, so their
	// decisions never conflict, and each added profile costs little memory. Without it, the profile
	// runs its own scheduler Deployment.
	// +optional
	SchedulerRef SchedulerReference `json:"schedulerRef,omitzero"`

	// rollout sets how a change of the configuration rolls out: whether it is previewed, and
	// whether its preview may stop it. A member of a Scheduler is previewed on its own entry, and
	// a change its preview stops holds back that entry only: the other members' changes roll out.
	// +optional
	Rollout RolloutSettings `json:"rollout,omitzero"`

	// access says which namespaces may use the profile's scheduler name. A pod that names it
	// from another namespace is refused at creation, by a ValidatingAdmissionPolicy the operator
	// keeps, and a namespace label that assigns it assigns nothing there. Unset, every namespace
	// may use it.
	// +optional
	Access ProfileAccess `json:"access,omitzero"`

	// projection says what the operator writes onto the pods of the profile's scheduler name when
	// they are created, so that what reads pod specs (autoscalers, the descheduler) agrees with the
	// scheduler. Unset, the profile's node restrictions are written.
	// +optional
	Projection ProfileProjection `json:"projection,omitzero"`
}

// SchedulerReference names a Scheduler.
type SchedulerReference struct {
	// name of the Scheduler (cluster-scoped) that runs this profile.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`
}

// Plugins lists the plugins to enable or disable at each extension point of the scheduling framework,
// with the field names of KubeSchedulerProfile.plugins (kubescheduler.config.k8s.io/v1).
type Plugins struct {
	// preEnqueue plugins run before a pod is added to the active scheduling queue.
	// +optional
	PreEnqueue PluginSet `json:"preEnqueue,omitzero"`

	// queueSort plugins order the scheduling queue. At most one may be enabled.
	// +optional
	QueueSort PluginSet `json:"queueSort,omitzero"`

	// preFilter plugins run at the PreFilter extension point, once per scheduling cycle.
	// +optional
	PreFilter PluginSet `json:"preFilter,omitzero"`

	// filter plugins remove nodes that cannot run the pod.
	// +optional
	Filter PluginSet `json:"filter,omitzero"`

	// postFilter plugins run only when no node is feasible (for example preemption).
	// +optional
	PostFilter PluginSet `json:"postFilter,omitzero"`

	// preScore plugins run before scoring.
	// +optional
	PreScore PluginSet `json:"preScore,omitzero"`

	// score plugins rank the feasible nodes; their weight multiplies their score.
	// +optional
	Score PluginSet `json:"score,omitzero"`

	// reserve plugins reserve and unreserve resources once a node is chosen.
	// +optional
	Reserve PluginSet `json:"reserve,omitzero"`

	// permit plugins can approve, deny or delay the binding of a pod.
	// +optional
	Permit PluginSet `json:"permit,omitzero"`

	// preBind plugins run before a pod is bound.
	// +optional
	PreBind PluginSet `json:"preBind,omitzero"`

	// bind plugins bind the pod to its node; the first that succeeds ends the list.
	// +optional
	Bind PluginSet `json:"bind,omitzero"`

	// postBind plugins run after a pod is bound.
	// +optional
	PostBind PluginSet `json:"postBind,omitzero"`

	// multiPoint enables or disables a plugin at every extension point it implements. A specific
	// extension point takes precedence over multiPoint, which takes precedence over the defaults;
	// disabling "*" here turns off every default plugin.
	// +optional
	MultiPoint PluginSet `json:"multiPoint,omitzero"`

	// placementGenerate plugins determine placements for a pod group during a pod group scheduling cycle.
	// +optional
	PlacementGenerate PluginSet `json:"placementGenerate,omitzero"`

	// placementScore plugins rank pod group placements; their weight multiplies their score.
	// +optional
	PlacementScore PluginSet `json:"placementScore,omitzero"`

	// podGroupPostFilter plugins run when a pod group cannot be scheduled (PostFilter for pod groups).
	// +optional
	PodGroupPostFilter PluginSet `json:"podGroupPostFilter,omitzero"`
}

// PluginSet is the list of plugins enabled and disabled at one extension point.
type PluginSet struct {
	// enabled plugins run in addition to the default ones, after them and in this order.
	// Enabling a default plugin again overrides its weight.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Enabled []Plugin `json:"enabled,omitempty"`

	// disabled plugins are default plugins that do not run at this extension point.
	// A single entry "*" disables every default plugin.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Disabled []Plugin `json:"disabled,omitempty"`
}

// Plugin names a plugin and, for score plugins, its weight.
type Plugin struct {
	// name of the plugin, for example "NodeResourcesFit", or "*" in a disabled list.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name,omitempty"`

	// weight multiplies the plugin's node score (Score and PlacementScore plugins only).
	// 0 or unset means the default weight (1). Between 0 and 100.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Weight *int32 `json:"weight,omitempty"`
}

// PluginConfig holds the arguments of one plugin.
type PluginConfig struct {
	// name of the plugin the arguments are for.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name,omitempty"`

	// args are the plugin's arguments, the fields of its "<name>Args" kind
	// (for example NodeResourcesFitArgs). apiVersion and kind may be left out.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Args runtime.RawExtension `json:"args,omitzero"`
}

// Extender is an HTTP scheduler extender, with the fields of KubeSchedulerConfiguration.extenders.
// +kubebuilder:validation:XValidation:rule="!has(self.prioritizeVerb) || size(self.prioritizeVerb) == 0 || (has(self.weight) && self.weight > 0)",message="weight must be positive when prioritizeVerb is set"
type Extender struct {
	// urlPrefix is the http or https URL at which the extender serves; verbs are appended to it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (self.startsWith('http://') || self.startsWith('https://'))",message="urlPrefix must be an http:// or https:// URL"
	URLPrefix string `json:"urlPrefix,omitempty"`

	// filterVerb is appended to urlPrefix for the filter call; empty if the extender does not filter.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	FilterVerb *string `json:"filterVerb,omitempty"`

	// preemptVerb is appended to urlPrefix for the preempt call; empty if not supported.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	PreemptVerb *string `json:"preemptVerb,omitempty"`

	// prioritizeVerb is appended to urlPrefix for the prioritize call; empty if not supported.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	PrioritizeVerb *string `json:"prioritizeVerb,omitempty"`

	// weight multiplies the node scores of the prioritize call; it must be positive when
	// prioritizeVerb is set.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Weight *int64 `json:"weight,omitempty"`

	// bindVerb is appended to urlPrefix for the bind call; empty if not supported. An extender that
	// binds is responsible for binding the pod, and only one extender may bind.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	BindVerb *string `json:"bindVerb,omitempty"`

	// enableHTTPS makes the scheduler call the extender over https.
	// +optional
	EnableHTTPS *bool `json:"enableHTTPS,omitempty"`

	// tlsConfig is the TLS configuration of the connection to the extender.
	// +optional
	TLSConfig *ExtenderTLSConfig `json:"tlsConfig,omitempty"`

	// httpTimeout is the timeout of one call to the extender, for example "5s". A filter timeout
	// fails the pod's scheduling attempt; a prioritize timeout is ignored.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	HTTPTimeout metav1.Duration `json:"httpTimeout,omitzero"`

	// nodeCacheCapable means the extender caches node information, so the scheduler sends only
	// node names.
	// +optional
	NodeCacheCapable *bool `json:"nodeCacheCapable,omitempty"`

	// managedResources are the extended resources this extender manages. If set, only pods that
	// request one of them are sent to the extender.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	ManagedResources []ExtenderManagedResource `json:"managedResources,omitempty"`

	// ignorable means scheduling does not fail when the extender errors or is unreachable.
	// +optional
	Ignorable *bool `json:"ignorable,omitempty"`
}

// ExtenderManagedResource is an extended resource managed by an extender.
type ExtenderManagedResource struct {
	// name of the extended resource, for example "example.com/gpu".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// ignoredByScheduler makes the scheduler skip this resource in its own resource checks.
	// +optional
	IgnoredByScheduler *bool `json:"ignoredByScheduler,omitempty"`
}

// ExtenderTLSConfig is the TLS configuration of the connection to an extender. The client
// certificate and its key come from a Secret in the operator's namespace (secretRef), which the
// operator mounts read-only into the scheduler's pods: a private key is never part of a
// SchedulerProfile, a Scheduler or the rendered configuration.
// +kubebuilder:validation:XValidation:rule="!has(self.keyData)",message="keyData is not accepted: put the client certificate and key in a Secret in the operator's namespace and name it in tlsConfig.secretRef"
// +kubebuilder:validation:XValidation:rule="!has(self.certData) || !has(self.secretRef)",message="certData and secretRef are exclusive: with secretRef the client certificate is the Secret's tls.crt"
// +kubebuilder:validation:XValidation:rule="!has(self.insecure) || !self.insecure || !has(self.caData)",message="insecure: true and caData are exclusive: the scheduler's TLS client refuses a CA with insecure; remove one"
type ExtenderTLSConfig struct {
	// insecure skips verification of the extender's certificate. For testing only. It cannot go
	// with a CA (caData, or ca.crt in the Secret of secretRef): the scheduler's TLS client
	// (client-go) refuses that combination, and the scheduler would not start.
	// +optional
	Insecure *bool `json:"insecure,omitempty"`

	// serverName is used for SNI and to check the extender's certificate; defaults to the URL's host.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServerName *string `json:"serverName,omitempty"`

	// secretRef names a Secret in the operator's namespace with the client certificate ("tls.crt")
	// and its key ("tls.key"), and optionally the CA bundle that signs the extender's certificate
	// ("ca.crt"): the keys of a kubernetes.io/tls Secret. The Secret must consent to this use,
	// and name its users: it is labelled scheduling.schedops.io/extender-tls: "true" and its
	// annotation scheduling.schedops.io/extender-tls-for lists, separated by commas, the
	// SchedulerProfiles whose own scheduler may mount it, by name, and the Schedulers, as
	// "Scheduler/<name>" (a Scheduler's extenders serve all its members), or is "*" for all.
	// The operator mounts those three keys only, read-only, into the scheduler's pods and points
	// the scheduler's certFile, keyFile and caFile at them. A change of the Secret's content rolls
	// the scheduler; while the Secret or one of its two required keys is missing, nothing is
	// rolled out (ConfigValid is False, reason SecretNotFound), nor while it does not consent to
	// this profile or Scheduler, its certificate and key are not a pair, or its ca.crt holds no
	// certificate (reason SecretInvalid). A rollback to an earlier revision is checked the same
	// way.
	// +optional
	SecretRef ExtenderSecretReference `json:"secretRef,omitzero"`

	// certData is a PEM-encoded client certificate. Not allowed with secretRef, whose tls.crt is
	// the client certificate. At most 64 KiB once base64-encoded.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	CertData []byte `json:"certData,omitempty"`

	// keyData is never accepted: a private key in a SchedulerProfile or Scheduler would be readable
	// by everyone who can read them or the scheduler's ConfigMap. Put the key in the Secret that
	// secretRef names. The field stays in the API only so that a key given here is refused with
	// that message instead of being dropped without a word.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	KeyData []byte `json:"keyData,omitempty"`

	// caData is a PEM-encoded CA bundle that signs the extender's certificate; it takes precedence
	// over the ca.crt of the Secret that secretRef names. At most 1 MiB once base64-encoded.
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	CAData []byte `json:"caData,omitempty"`
}

// ExtenderSecretReference names a Secret in the operator's namespace.
type ExtenderSecretReference struct {
	// name of the Secret, in the operator's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name,omitempty"`
}

// SchedulerSettings sets how the managed scheduler Deployment runs.
type SchedulerSettings struct {
	// replicas is the number of scheduler pods, 1 to 5. Leader election is always on: only the
	// leader schedules, and the others take over when it fails. Defaults to 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	Replicas *int32 `json:"replicas,omitempty"`

	// resources of the scheduler container. Defaults to requests of 100m CPU and 128Mi memory.
	// Each CPU and memory request and limit is at most the operator's --max-scheduler-cpu and
	// --max-scheduler-memory (by default 4 and 8Gi), set by the cluster admin; other resources
	// only as the operator's --allowed-scheduler-resources allows (none by default). The type is
	// core/v1's, whose schema carries no bounds of its own; the object's size bounds it.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitzero"`

	// nodeSelector constrains the nodes the scheduler pods run on: at most 64 labels, each key
	// at most 317 characters (a 253-character prefix, "/" and a 63-character name) and each
	// value at most 63, as for labels.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && size(self[k]) <= 63)",message="nodeSelector keys are at most 317 characters and values at most 63, as for labels"
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations of the scheduler pods, at most 64. Each is a core/v1 Toleration, whose schema
	// carries no bounds of its own: a rule bounds its key as a label key (317 characters), its
	// value as a label value (63), and its operator and effect to 32 characters. A toleration
	// without a key and with operator Exists tolerates every taint, and is refused unless the
	// cluster admin allows it (--allow-tolerate-all-taints).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(t, (!has(t.key) || size(t.key) <= 317) && (!has(t.value) || size(t.value) <= 63) && (!has(t.operator) || size(t.operator) <= 32) && (!has(t.effect) || size(t.effect) <= 32))",message="a toleration's key is at most 317 characters and its value at most 63, as for labels, and its operator and effect at most 32"
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// affinity of the scheduler pods. Their pod (anti-)affinity terms may only select pods of
	// the operator's namespace: namespaces and namespaceSelector are refused, so that a profile
	// cannot keep other teams' pods off nodes or preempt them through the scheduler pods. The
	// type is core/v1's, whose schema carries no bounds of its own; the object's size bounds it.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// priorityClassName of the scheduler pods, for example "system-cluster-critical". It must be
	// one of the operator's --allowed-priority-classes, which by default allows none: a priority
	// class decides whose pods the scheduler pods preempt, so the cluster admin chooses.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName *string `json:"priorityClassName,omitempty"`

	// logVerbosity is the scheduler's log level (-v), 0 to 10. Defaults to 2.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	LogVerbosity *int32 `json:"logVerbosity,omitempty"`

	// rolloutDeadlineSeconds is how long a new revision of the scheduler may take to become
	// available, from when the operator applied it (a revert to a revision that ran before gets
	// a deadline of its own). Past it, or once a new pod's failure has persisted past the
	// operator's thresholds (by default: no node to run on for 60 s, an image that cannot be
	// pulled for 60 s, CrashLoopBackOff after 3 restarts), the operator returns the Deployment to
	// the last revision that ran available and reports Degraded, reason RolloutFailed. 30 to
	// 3600; defaults to the operator's --rollout-deadline, 180 s.
	// +optional
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=3600
	RolloutDeadlineSeconds int32 `json:"rolloutDeadlineSeconds,omitempty"`

	// featureGates turns kube-scheduler feature gates on or off (--feature-gates), for example
	// {GenericWorkload: true} for gang scheduling. The operator validates the profiles with these
	// gates, refuses unknown and locked gates and gates without the gates they depend on, and
	// checks that the cluster serves the APIs they need. A change rolls the scheduler.
	// At most 64 gates, each name at most 128 characters.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 128)",message="feature gate names are at most 128 characters"
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}

// SchedulerProfileStatus is what the operator observed when it last reconciled the profile.
type SchedulerProfileStatus struct {
	// conditions are ConfigValid, Available, Progressing, Degraded and Advisory.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation of the spec that the operator last reconciled successfully.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// schedulerName is the resolved scheduler name that pods use to choose this profile.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	SchedulerName string `json:"schedulerName,omitempty"`

	// servedSchedulerName is the scheduler name that a running scheduler serves for the profile
	// now: a ready scheduler pod, not being deleted, runs a configuration with the profile's
	// entry. It differs from schedulerName while a rename is not rolled out (held by a preview,
	// invalid, refused or rolled back), and is empty while no scheduler serves the profile.
	// Namespace assignment assigns served names only.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ServedSchedulerName string `json:"servedSchedulerName,omitempty"`

	// strandedPods counts the pending pods that namespace assignment sent to the scheduler name the
	// profile asks for while no running scheduler serves it: they wait until one does. The
	// operator's --stranded-pod-grace deletes those a controller owns, for it to recreate them.
	// +optional
	// +kubebuilder:validation:Minimum=1
	StrandedPods int32 `json:"strandedPods,omitempty"`

	// advice lists what the profile doctor found in the valid configuration of the latest spec:
	// settings that will probably not do what was meant (docs/reference/advice.md). The codes
	// of the annotation scheduling.schedops.io/advice-ignore are left out. Advice never stops a
	// rollout.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Advice []AdviceEntry `json:"advice,omitempty"`

	// assignedNamespaces are the Namespaces whose new pods are assigned to schedulerName by
	// their scheduling.schedops.io/scheduler-name label, dry-run ones included; absent when none.
	// +optional
	AssignedNamespaces AssignedNamespaces `json:"assignedNamespaces,omitzero"`

	// preview is the latest preview of a change of the configuration (spec.rollout.preview).
	// +optional
	Preview PreviewStatus `json:"preview,omitzero"`

	// ProcessStatus names the objects and rollouts of the scheduler process that serves the
	// profile: its own, or its Scheduler's.
	ProcessStatus `json:",inline"`
}

// AdviceEntry is one finding of the profile doctor.
type AdviceEntry struct {
	// code is the stable code of the check, such as SPA101.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=16
	Code string `json:"code,omitempty"`

	// message names the fields and says what will happen, in one line.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// AssignedNamespaces counts the Namespaces assigned to a scheduler name and names the first ones.
type AssignedNamespaces struct {
	// count is how many Namespaces are assigned.
	// +required
	// +kubebuilder:validation:Minimum=1
	Count int32 `json:"count,omitempty"`

	// names are the first assigned Namespaces in alphabetical order, at most 5.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5
	// +kubebuilder:validation:items:MaxLength=63
	Names []string `json:"names,omitempty"`
}

// SchedulerProfileList is a list of SchedulerProfiles.
//
// +kubebuilder:object:root=true
type SchedulerProfileList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the SchedulerProfiles.
	Items []SchedulerProfile `json:"items"`
}

// ProcessStatus is what a SchedulerProfile and a Scheduler report alike about the scheduler
// process that runs their configuration.
type ProcessStatus struct {
	// configHash is the content hash of the rendered KubeSchedulerConfiguration that is rolled out.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ConfigHash string `json:"configHash,omitempty"`

	// configMapName is the immutable ConfigMap, in the operator's namespace, holding the rendered configuration.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ConfigMapName string `json:"configMapName,omitempty"`

	// deploymentName is the scheduler Deployment in the operator's namespace.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	DeploymentName string `json:"deploymentName,omitempty"`

	// lastAvailableRevision is the revision (hash of the scheduler's pod template) that last ran
	// with every replica available: where a failed rollout returns.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	LastAvailableRevision string `json:"lastAvailableRevision,omitempty"`

	// failedRevision is the revision whose rollout failed and was rolled back; it is not tried
	// again until the spec changes.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	FailedRevision string `json:"failedRevision,omitempty"`

	// rolloutFailure says why the rollout of failedRevision failed.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	RolloutFailure string `json:"rolloutFailure,omitempty"`

	// rollbackRefusal says why the Deployment was not returned to lastAvailableRevision after the
	// rollout of failedRevision failed: a Secret that revision mounts no longer consents to this
	// scheduler (its annotation scheduling.schedops.io/extender-tls-for does not list it), or is
	// gone. A rollback is checked like a rollout.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	RollbackRefusal string `json:"rollbackRefusal,omitempty"`
}

// ProfileProjection says what the operator writes onto the pods of a profile's scheduler name.
type ProfileProjection struct {
	// nodeRestrictions is Enabled (the default) or Disabled. Enabled, a pod created with the
	// scheduler name that a running scheduler serves for this profile gets the node restrictions
	// of the configuration that scheduler runs that have an exact pod-level equivalent (the
	// NodePool plugin's nodeSelector, and NodeAffinity's addedAffinity required terms) as required
	// node affinity, ANDed with the pod's own terms as the scheduler ANDs addedAffinity: its
	// decisions do not change, and autoscalers, which read only pod specs, provision nodes the
	// scheduler will use. The pod's annotation scheduling.schedops.io/projected-node-restrictions
	// says what was added; a pod annotated scheduling.schedops.io/project-node-restrictions:
	// "false" gets nothing.
	// +optional
	// +kubebuilder:validation:Enum=Enabled;Disabled
	NodeRestrictions ProjectionMode `json:"nodeRestrictions,omitempty"`
}

// ProjectionMode turns a projection on or off.
type ProjectionMode string

// Values of ProjectionMode.
const (
	// ProjectionEnabled writes the projection onto the pods (the default).
	ProjectionEnabled ProjectionMode = "Enabled"
	// ProjectionDisabled writes nothing.
	ProjectionDisabled ProjectionMode = "Disabled"
)

// ProjectsNodeRestrictions tells whether the profile's node restrictions are written onto its pods.
func (p ProfileProjection) ProjectsNodeRestrictions() bool {
	return p.NodeRestrictions != ProjectionDisabled
}

// ProfileAccess says which namespaces may use a profile's scheduler name.
type ProfileAccess struct {
	// namespaceSelector selects the namespaces whose pods may name the profile's scheduler, by
	// their labels, as a label selector does. An empty selector selects every namespace; unset is
	// every namespace too.
	// +optional
	NamespaceSelector *NamespaceSelector `json:"namespaceSelector,omitempty"`
}

// NamespaceSelector is a label selector of namespaces (metav1.LabelSelector), with bounds: the
// requirements are ANDed.
type NamespaceSelector struct {
	// matchLabels selects the namespaces that have each of these labels with these values.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && size(self[k]) <= 63)",message="label keys are at most 317 characters and values at most 63"
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// matchExpressions selects the namespaces whose labels meet each of these requirements.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	MatchExpressions []NamespaceSelectorRequirement `json:"matchExpressions,omitempty"`
}

// NamespaceSelectorRequirement is a requirement on a namespace's label, as a label selector's.
// +kubebuilder:validation:XValidation:rule="(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",message="values are required for In and NotIn, and not allowed for Exists and DoesNotExist"
type NamespaceSelectorRequirement struct {
	// key is the label's key.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key,omitempty"`

	// operator is In, NotIn, Exists or DoesNotExist.
	// +required
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator,omitempty"`

	// values are the label's values that In and NotIn compare with.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	Values []string `json:"values,omitempty"`
}

// LabelSelector is the selector as a metav1.LabelSelector; nil for nil.
func (s *NamespaceSelector) LabelSelector() *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	for _, r := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
	}
	return out
}
