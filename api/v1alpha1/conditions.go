package v1alpha1

// Condition types of a SchedulerProfile; a Scheduler has all but ConfigValid and Advisory.
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
	// ConditionAdvisory is True when the profile doctor found settings of a valid configuration
	// that will probably not do what was meant (status.advice lists them); a SchedulerProfile only.
	ConditionAdvisory = "Advisory"
)

// Reasons of the ConfigValid condition.
const (
	// ReasonConfigAccepted means the configuration passed decoding, validation and plugin construction.
	ReasonConfigAccepted = "ConfigAccepted"
	// ReasonInvalidConfig means the scheduler would refuse the configuration; the message says why.
	ReasonInvalidConfig = "InvalidConfig"
	// ReasonSchedulerNameConflict means an older profile already claims the same schedulerName.
	ReasonSchedulerNameConflict = "SchedulerNameConflict"
	// ReasonQueueSortConflict means the profile's queueSort plugin or its args differ from its
	// Scheduler's (that of the configuration that runs); upstream requires one queue sort per process.
	ReasonQueueSortConflict = "QueueSortConflict"
	// ReasonRequiredAPIUnavailable means a feature gate of the scheduler needs an API that the
	// cluster does not serve; the message names it and the apiserver flags that serve it.
	ReasonRequiredAPIUnavailable = "RequiredAPIUnavailable"
	// ReasonSecretNotFound means a Secret that an extender's tlsConfig.secretRef names, or one of
	// its required keys (tls.crt, tls.key), is missing in the operator's namespace; the message
	// names it. Nothing is rolled out until it exists, and a running scheduler keeps running. On a
	// Scheduler, which has no ConfigValid condition, it is a reason of Degraded.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretInvalid means a Secret that an extender's tlsConfig.secretRef names cannot be
	// used: it does not consent to the profile or Scheduler (it is not labelled
	// scheduling.schedops.io/extender-tls=true, or its annotation
	// scheduling.schedops.io/extender-tls-for lists neither the profile's name, nor
	// "Scheduler/<name>" of the Scheduler, nor "*"), its tls.crt and tls.key are not a
	// certificate and its key, its ca.crt holds no certificate, or an HTTPS extender would have
	// no CA to verify the extender with (and does not set insecure: true). The message names the
	// Secret and what is wrong. Nothing is rolled out until it is fixed, and a running scheduler
	// keeps running. On a Scheduler it is a reason of Degraded.
	ReasonSecretInvalid = "SecretInvalid"
	// ReasonTooManyMembers means the profile's Scheduler already serves its maximum of profiles
	// (128); this one is refused alone and the others are served.
	ReasonTooManyMembers = "TooManyMembers"
	// ReasonConfigTooLarge means the profile's entry would push the rendered configuration of its
	// scheduler past the size a ConfigMap holds (1 MiB less a margin); the message gives the size.
	// The profile is refused alone: the other members' changes roll out.
	ReasonConfigTooLarge = "ConfigTooLarge"
	// ReasonVersionSkew means the scheduler would be newer than the cluster's kube-apiserver, which
	// Kubernetes' version skew policy does not allow (or the apiserver's version cannot be read as
	// one); the message names both versions. Nothing is rolled out, and a running scheduler keeps
	// running. On a Scheduler, which has no ConfigValid condition, it is a reason of Degraded.
	ReasonVersionSkew = "VersionSkew"
)

// Reasons of the Available condition.
const (
	// ReasonMinimumReplicasAvailable means at least one scheduler replica is available.
	ReasonMinimumReplicasAvailable = "MinimumReplicasAvailable"
	// ReasonNoReplicasAvailable means no scheduler replica is available yet.
	ReasonNoReplicasAvailable = "NoReplicasAvailable"
	// ReasonNotRolledOut means no valid configuration has been rolled out, so no scheduler runs.
	ReasonNotRolledOut = "NotRolledOut"
	// ReasonNotServed means the Scheduler's replicas run, but not a configuration with this
	// member's entry; the message says which configuration runs.
	ReasonNotServed = "NotServed"
	// ReasonSchedulerNotFound means the Scheduler that spec.schedulerRef names does not exist; the
	// profile runs as soon as it is created.
	ReasonSchedulerNotFound = "SchedulerNotFound"
	// ReasonNoProfiles means no SchedulerProfile with a valid configuration names the Scheduler,
	// so no scheduler process runs.
	ReasonNoProfiles = "NoProfiles"
)

// Reasons of the Progressing condition.
const (
	// ReasonRollingOut means the Deployment is rolling out the latest configuration.
	ReasonRollingOut = "RollingOut"
	// ReasonRolloutComplete means every replica runs the latest configuration.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonUpgradeWaiting means the operator's scheduler image changed (an operator upgrade or
	// downgrade) and this scheduler waits for its turn: a few schedulers move at a time.
	ReasonUpgradeWaiting = "UpgradeWaiting"
	// ReasonUpgradeStopped means the operator's new scheduler image was rolled back on another
	// scheduler, so the upgrade stopped and this scheduler stays on the image that works.
	ReasonUpgradeStopped = "UpgradeStopped"
	// ReasonPreviewRunning means spec.rollout.preview.mode is Guard and the change waits for its
	// preview; the running scheduler keeps its configuration meanwhile.
	ReasonPreviewRunning = "PreviewRunning"
	// ReasonPreviewRefused means spec.rollout.preview.mode is Guard and the change's preview
	// left more of the profile's pods unschedulable than the running configuration does, by
	// more than maxNewlyUnschedulable (or ran out of its object, memory, CPU time or time
	// budget, or failed): the change is not rolled out and the running scheduler keeps running.
	// The message names a few of the pods with the scheduler's reason, or the budget and its
	// flag; changing the spec, or the mode, decides again.
	ReasonPreviewRefused = "PreviewRefused"
)

// Reasons of the Advisory condition.
const (
	// ReasonAdviceFound means at least one check of the profile doctor fired; the message lists
	// the codes, and status.advice the findings.
	ReasonAdviceFound = "AdviceFound"
	// ReasonNoAdvice means no check fired, but those the annotation
	// scheduling.schedops.io/advice-ignore silences.
	ReasonNoAdvice = "NoAdvice"
	// ReasonAdviceNotChecked means the latest spec has no valid configuration to check (see
	// ConfigValid), so it has no advice.
	ReasonAdviceNotChecked = "NotChecked"
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
	// ReasonRolloutFailed means a new revision of the scheduler did not become available (the
	// message says why) and the Deployment was returned to the last revision that ran available,
	// or was not, since a Secret that revision mounts no longer consents (status.rollbackRefusal).
	ReasonRolloutFailed = "RolloutFailed"
	// ReasonUnsupportedVersionSkew means the scheduler is more than one minor older than the
	// cluster's kube-apiserver, beyond what the version skew policy supports; it is rolled out all
	// the same, and the operator (which ships the scheduler) should be upgraded.
	ReasonUnsupportedVersionSkew = "UnsupportedVersionSkew"
	// ReasonSchedulerDeleting means the Scheduler that spec.schedulerRef names is being deleted:
	// the profile is served until the Scheduler's Deployment is gone, and then by nothing.
	ReasonSchedulerDeleting = "SchedulerDeleting"
)
