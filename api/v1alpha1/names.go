package v1alpha1

// FieldManager is the one field manager of every server-side apply of the operator.
const FieldManager = "scheduler-profile-operator"

// LeaderElectionID is the operator's own lease; the managed schedulers use leases of their own.
const LeaderElectionID = "scheduler-profile-operator.schedops.io"
