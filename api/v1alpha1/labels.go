// Label and annotation keys the operator reads and writes, in one file: docs/reference/labels.md is
// generated from it (hack/labels-doc).

package v1alpha1

// Keys that profile authors write on a SchedulerProfile.
const (
	// AnnotationAdviceIgnore on a SchedulerProfile lists, separated by commas, the codes of advice
	// (docs/reference/advice.md) that the operator does not report for it: the author knows and
	// means it.
	AnnotationAdviceIgnore = "scheduling.schedops.io/advice-ignore"
)

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
)

// Keys of the assignment of a namespace's pods to a scheduler name: the labels that namespace
// owners write, after Pod Security Admission's convention of namespace-level policy in namespace
// labels, and the annotation that the operator's admission policies, which the apiserver runs,
// write on the pods and PodGroups they decide about.
const (
	// LabelAssignSchedulerName on a Namespace assigns the pods created in it to a scheduler name:
	// a new pod that names no scheduler (or default-scheduler) gets this one, when a running
	// scheduler serves it (the profile's status.servedSchedulerName) and the profile's
	// spec.access admits the namespace. On a PodGroup, the assignment policy writes it: the name
	// the namespace asked for when the PodGroup was created, which the group's pods get when
	// that decision assigned it.
	LabelAssignSchedulerName = "scheduling.schedops.io/scheduler-name"
	// LabelAssignMode on a Namespace is AssignModeEnforce (the default) or AssignModeDryRun.
	LabelAssignMode = "scheduling.schedops.io/scheduler-name-mode"
	// LabelAssignFallback on a Namespace says what a pod gets while no running scheduler serves
	// the name: AssignFallbackDefaultScheduler (the default) or AssignFallbackNone.
	LabelAssignFallback = "scheduling.schedops.io/scheduler-name-fallback"
	// AnnotationAssignment on a pod says what the assignment policy did and why: "assigned",
	// "assigned although <reason>", "fallback: <reason>", "skipped: <reason>" or "dry-run: <what
	// it would do>". On a PodGroup it is the decision its pods get, and on a pod of a PodGroup
	// that decision followed by " (PodGroup <name>)", unless the pod names another scheduler.
	AnnotationAssignment = "scheduling.schedops.io/assignment"
)

// Values of LabelAssignMode.
const (
	// AssignModeEnforce sets the scheduler name of new pods.
	AssignModeEnforce = "enforce"
	// AssignModeDryRun only annotates new pods with what enforce would do.
	AssignModeDryRun = "dry-run"
)

// Values of LabelAssignFallback.
const (
	// AssignFallbackDefaultScheduler leaves a pod on default-scheduler while no running
	// scheduler serves the name, so that no pod waits Pending for a scheduler that is not there.
	AssignFallbackDefaultScheduler = DefaultSchedulerName
	// AssignFallbackNone assigns the name anyway: the pods wait Pending until a scheduler serves it.
	AssignFallbackNone = "none"
)

// Keys of the projection of a profile's node restrictions onto its pods (spec.projection).
const (
	// AnnotationProjectedNodeRestrictions on a pod says which node restrictions of which profile
	// the projection policy added to its required node affinity, and why.
	AnnotationProjectedNodeRestrictions = "scheduling.schedops.io/projected-node-restrictions"
	// AnnotationProjectNodeRestrictions on a pod, set to "false" by its author, keeps the
	// projection policy from adding anything to it.
	AnnotationProjectNodeRestrictions = "scheduling.schedops.io/project-node-restrictions"
)
