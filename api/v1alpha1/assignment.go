package v1alpha1

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
