package controllers

// Label and annotation keys of the objects the operator manages.
const (
	// LabelProfile names the SchedulerProfile an object belongs to; the operator selects its
	// ConfigMaps and ReplicaSets by it.
	LabelProfile = "scheduling.schedops.io/profile"
	// LabelScheduler names the Scheduler an object belongs to, as LabelProfile does for a profile
	// that runs its own scheduler.
	LabelScheduler = "scheduling.schedops.io/scheduler"
	// LabelConfigHash is the config hash of a ConfigMap.
	LabelConfigHash = "scheduling.schedops.io/config-hash"
	// LabelGeneration is the owner's generation that last rendered a ConfigMap: pruning keeps
	// the newest, which creation timestamps (to the second) cannot always tell apart.
	LabelGeneration = "scheduling.schedops.io/profile-generation"
	// AnnotationConfigHash is the config hash on the scheduler's pod template: a new config is a
	// new template, so a rolling update; the same config is no update at all.
	AnnotationConfigHash = "scheduling.schedops.io/config-hash"
	// AnnotationRevision is the hash of the scheduler's whole pod template, on the template: it
	// tells which ReplicaSet runs which revision, so a failed one can be rolled back.
	AnnotationRevision = "scheduling.schedops.io/revision"
	// AnnotationRevisionAppliedAt is when the operator applied the Deployment's current template
	// revision (RFC 3339), on the Deployment: the rollout deadline of a revision runs from it. It
	// is written with the template, in the same apply, and carried unchanged while the revision
	// stays, so it survives a restart of the operator; a revert to a template that ran before gets
	// a new one, unlike the ReplicaSet the Deployment reuses for it.
	AnnotationRevisionAppliedAt = "scheduling.schedops.io/revision-applied-at"
	// AnnotationImageRolledBack is the scheduler image that a rollback of the Deployment returned
	// from, on the Deployment: while the operator's scheduler image is that one, the wave of its
	// upgrade is stopped, and the other schedulers stay on the image that works.
	AnnotationImageRolledBack = "scheduling.schedops.io/image-rolled-back"
	// AnnotationExtenderSecretsHash is the content hash of the extenders' TLS Secrets on the
	// scheduler's pod template: a rotated certificate rolls the scheduler, while the
	// configuration and its ConfigMap stay the same.
	AnnotationExtenderSecretsHash = "scheduling.schedops.io/extender-secrets-hash"
	// AnnotationLease is the leader-election lease of the scheduler's pod template. A rollout to
	// a template with another lease stops the old pods before new ones start (Recreate): two
	// leases are two leaders, two schedulers binding pods of one scheduler name.
	AnnotationLease = "scheduling.schedops.io/lease"

	// LabelExtenderTLS, with the value "true", is a Secret's consent to be mounted into the
	// scheduler pods of the extenders whose tlsConfig.secretRef names it: without it, a profile
	// author could mount any Secret of the operator's namespace (another team's client
	// certificate, the webhook's serving certificate).
	LabelExtenderTLS = "scheduling.schedops.io/extender-tls"
	// AnnotationExtenderTLSFor, on a Secret labelled LabelExtenderTLS, names who the consent is
	// for: comma-separated SchedulerProfile names (spaces around a name are ignored), a Scheduler
	// as "Scheduler/<name>", or "*" for every profile and Scheduler. The label alone consents to
	// no one: otherwise every profile author could mount a Secret consented for another team.
	AnnotationExtenderTLSFor = "scheduling.schedops.io/extender-tls-for"

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
