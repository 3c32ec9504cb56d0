package plan

// Field indexes of the objects in the manager's cache, so that a pass or an event reads the few
// objects it concerns instead of every object of a kind: with a thousand profiles, a pass that
// reads every Deployment costs a thousand times what it should.
const (
	// IndexSchedulerName indexes profiles by the scheduler name they ask for.
	IndexSchedulerName = "schedops.io/schedulerName"
	// IndexSchedulerRef indexes profiles by the Scheduler their schedulerRef names.
	IndexSchedulerRef = "schedops.io/schedulerRef"
	// IndexOwner indexes the ConfigMaps, ReplicaSets and pods of the operator's namespace by the
	// owner their labels name: ownerKey.
	IndexOwner = "schedops.io/owner"
	// IndexMounts indexes the scheduler Deployments and pods by the configuration ConfigMap they
	// mount.
	IndexMounts = "schedops.io/mounts"
	// IndexSchedulerNames indexes the configuration ConfigMaps by the scheduler names of the
	// profiles they hold.
	IndexSchedulerNames = "schedops.io/schedulerNames"
	// IndexHeld indexes the scheduler Deployments that are not on the operator's image and
	// lease (upgraded): the upgrade wave's, which wait for their turn.
	IndexHeld = "schedops.io/held"
	// IndexWaitingForName indexes the profiles that wait for a scheduler name
	// (ConfigValid=False, SchedulerNameConflict).
	IndexWaitingForName = "schedops.io/waitingForName"
	// IndexLease indexes the scheduler pods by the lease their template runs on (schedulingv1alpha1.AnnotationLease).
	IndexLease = "schedops.io/lease"
)
