package v1alpha1

// Condition types of a SchedulerProfile.
const (
	// ConditionConfigValid is True when the rendered configuration passed the scheduler's own checks.
	ConditionConfigValid = "ConfigValid"
	// ConditionAvailable is True when at least one scheduler replica is serving.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while a new configuration is rolling out.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when something needs a human: an invalid new configuration while an
	// old one runs, or a rollout past its progress deadline.
	ConditionDegraded = "Degraded"
)

// Reasons of the ConfigValid condition.
const (
	// ReasonConfigAccepted means the configuration passed decoding, validation and plugin construction.
	ReasonConfigAccepted = "ConfigAccepted"
	// ReasonInvalidConfig means the scheduler would refuse the configuration; the message says why.
	ReasonInvalidConfig = "InvalidConfig"
	// ReasonSchedulerNameConflict means an older profile already claims the same schedulerName.
	ReasonSchedulerNameConflict = "SchedulerNameConflict"
)

// Reasons of the Available condition.
const (
	// ReasonMinimumReplicasAvailable means at least one scheduler replica is available.
	ReasonMinimumReplicasAvailable = "MinimumReplicasAvailable"
	// ReasonNoReplicasAvailable means no scheduler replica is available yet.
	ReasonNoReplicasAvailable = "NoReplicasAvailable"
	// ReasonNotRolledOut means no valid configuration has been rolled out, so no scheduler runs.
	ReasonNotRolledOut = "NotRolledOut"
)

// Reasons of the Progressing condition.
const (
	// ReasonRollingOut means the Deployment is rolling out the latest configuration.
	ReasonRollingOut = "RollingOut"
	// ReasonRolloutComplete means every replica runs the latest configuration.
	ReasonRolloutComplete = "RolloutComplete"
)

// Reasons of the Degraded condition.
const (
	// ReasonAsExpected means nothing needs attention.
	ReasonAsExpected = "AsExpected"
	// ReasonInvalidConfigNotRolledOut means a new configuration is invalid and the previous one keeps running.
	ReasonInvalidConfigNotRolledOut = "InvalidConfigNotRolledOut"
	// ReasonProgressDeadlineExceeded means the rollout did not finish within the Deployment's progress deadline.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonApplyFailed means a valid configuration could not be applied (permissions, quota, a
	// webhook); the message has the error, and the operator retries.
	ReasonApplyFailed = "ApplyFailed"
)
