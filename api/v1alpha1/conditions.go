package v1alpha1

// The condition types and reasons of SchedulerProfiles and Schedulers. Each reason's doc comment
// ends with the sentence "Set on:" that names the kinds, condition types and statuses it is set
// on; hack/conditions-doc writes docs/reference/conditions.md from them, and the doc tests
// compare the pages' lists of reasons with them.

// Condition types of a SchedulerProfile; a Scheduler has all but ConfigValid and Advisory.
const (
	// ConditionConfigValid is True when the latest spec's configuration passed the scheduler's own
	// checks and those that need the cluster (its Secrets, the APIs it serves, its version), and
	// fits its Scheduler; False says why, and nothing of the latest spec is rolled out.
	ConditionConfigValid = "ConfigValid"
	// ConditionAvailable is True when at least one scheduler replica is available and, for a
	// member of a Scheduler, runs a configuration with the member's entry.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while a new configuration or scheduler image is rolling out,
	// or waits for its turn in an upgrade wave. It is False once every replica runs the latest
	// configuration, while nothing is rolled out, after an upgrade wave stopped, and while the
	// preview of a change holds it back (Guard mode): a held change is not rolling out.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when something needs a human: a change that is refused while the
	// configuration before it keeps running, a rollout rolled back or past its progress
	// deadline, objects that cannot be applied, a version skew, a Scheduler being deleted.
	ConditionDegraded = "Degraded"
	// ConditionAdvisory is True when the profile doctor found settings of a valid configuration
	// that will probably not do what was meant (status.advice lists them); a SchedulerProfile only.
	ConditionAdvisory = "Advisory"
)

// Reasons of the ConfigValid condition.
const (
	// ReasonConfigAccepted means the configuration passed decoding, validation and plugin
	// construction. Set on: SchedulerProfile ConfigValid=True.
	ReasonConfigAccepted = "ConfigAccepted"
	// ReasonInvalidConfig means the scheduler would refuse the configuration, or the scheduler
	// pods ask for more than the operator allows; the message says why. Set on: SchedulerProfile
	// ConfigValid=False.
	ReasonInvalidConfig = "InvalidConfig"
	// ReasonSchedulerNameConflict means another profile keeps the same schedulerName (it serves
	// it, or asked for it first while nobody serves it); nothing is rolled out until it is free.
	// On Degraded, the profile's running scheduler keeps its configuration, or was scaled to zero
	// because another profile serves the name. Set on: SchedulerProfile ConfigValid=False,
	// Degraded=True.
	ReasonSchedulerNameConflict = "SchedulerNameConflict"
	// ReasonQueueSortConflict means the profile's queueSort plugin or its args differ from its
	// Scheduler's (that of the configuration that runs); upstream requires one queue sort per
	// process. The member keeps its running entry. Set on: SchedulerProfile ConfigValid=False,
	// Degraded=True.
	ReasonQueueSortConflict = "QueueSortConflict"
	// ReasonRequiredAPIUnavailable means a feature gate of the scheduler needs an API that the
	// cluster does not serve; the message names it and the apiserver flags that serve it. Nothing
	// is rolled out, and a running scheduler keeps running. Set on: SchedulerProfile
	// ConfigValid=False, Degraded=True; Scheduler Degraded=True.
	ReasonRequiredAPIUnavailable = "RequiredAPIUnavailable"
	// ReasonSecretNotFound means a Secret that an extender's tlsConfig.secretRef names, or one of
	// its required keys (tls.crt, tls.key), is missing in the operator's namespace; the message
	// names it. Nothing is rolled out until it exists, and a running scheduler keeps running. Set
	// on: SchedulerProfile ConfigValid=False, Degraded=True; Scheduler Degraded=True.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretInvalid means a Secret that an extender's tlsConfig.secretRef names cannot be
	// used: it does not consent to the profile or Scheduler (it is not labelled
	// scheduling.schedops.io/extender-tls=true, or its annotation
	// scheduling.schedops.io/extender-tls-for lists neither the profile's name, nor
	// "Scheduler/<name>" of the Scheduler, nor "*"), its tls.crt and tls.key are not a
	// certificate and its key, its ca.crt holds no certificate, or an HTTPS extender would have
	// no CA to verify the extender with (and does not set insecure: true). The message names the
	// Secret and what is wrong. Nothing is rolled out until it is fixed, and a running scheduler
	// keeps running. Set on: SchedulerProfile ConfigValid=False, Degraded=True; Scheduler
	// Degraded=True.
	ReasonSecretInvalid = "SecretInvalid"
	// ReasonTooManyMembers means the profile's Scheduler already serves its maximum of profiles
	// (128); this one is refused alone and the others are served. Set on: SchedulerProfile
	// ConfigValid=False.
	ReasonTooManyMembers = "TooManyMembers"
	// ReasonConfigTooLarge means the profile's entry would push the rendered configuration of its
	// scheduler past the size a ConfigMap holds (1 MiB less a margin); the message gives the size.
	// The profile is refused alone: the other members' changes roll out. Set on: SchedulerProfile
	// ConfigValid=False.
	ReasonConfigTooLarge = "ConfigTooLarge"
	// ReasonVersionSkew means the scheduler would be newer than the cluster's kube-apiserver, which
	// Kubernetes' version skew policy does not allow (or the apiserver's version cannot be read as
	// one); the message names both versions. Nothing is rolled out, and a running scheduler keeps
	// running. Set on: SchedulerProfile ConfigValid=False, Degraded=True; Scheduler Degraded=True.
	ReasonVersionSkew = "VersionSkew"
)

// Reasons of the Available condition.
const (
	// ReasonMinimumReplicasAvailable means at least one scheduler replica is available. Set on:
	// SchedulerProfile Available=True; Scheduler Available=True.
	ReasonMinimumReplicasAvailable = "MinimumReplicasAvailable"
	// ReasonNoReplicasAvailable means no scheduler replica is available yet. Set on:
	// SchedulerProfile Available=False; Scheduler Available=False.
	ReasonNoReplicasAvailable = "NoReplicasAvailable"
	// ReasonNotRolledOut means no valid configuration has been rolled out, so no scheduler runs.
	// Set on: SchedulerProfile Available=False, Progressing=False; Scheduler Available=False,
	// Progressing=False.
	ReasonNotRolledOut = "NotRolledOut"
	// ReasonNotServed means the Scheduler's replicas run, but not a configuration with this
	// member's entry (a member refused past the member limit, or added by a rollout that is not
	// complete); the message says which configuration runs. Set on: SchedulerProfile
	// Available=False.
	ReasonNotServed = "NotServed"
	// ReasonSchedulerNotFound means the Scheduler that spec.schedulerRef names does not exist; the
	// profile runs as soon as it is created. Set on: SchedulerProfile Available=False.
	ReasonSchedulerNotFound = "SchedulerNotFound"
	// ReasonNoProfiles means no SchedulerProfile with a valid configuration names the Scheduler,
	// so no scheduler process runs. Set on: Scheduler Available=False.
	ReasonNoProfiles = "NoProfiles"
)

// Reasons of the Progressing condition.
const (
	// ReasonRollingOut means the Deployment is rolling out the latest configuration. Set on:
	// SchedulerProfile Progressing=True; Scheduler Progressing=True.
	ReasonRollingOut = "RollingOut"
	// ReasonRolloutComplete means every replica runs the latest configuration. Set on:
	// SchedulerProfile Progressing=False; Scheduler Progressing=False.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonUpgradeWaiting means the operator's scheduler image changed (an operator upgrade or
	// downgrade) and this scheduler waits for its turn: a few schedulers move at a time. Set on:
	// SchedulerProfile Progressing=True; Scheduler Progressing=True.
	ReasonUpgradeWaiting = "UpgradeWaiting"
	// ReasonUpgradeStopped means the operator's new scheduler image was rolled back on another
	// scheduler, so the upgrade stopped and this scheduler stays on the image that works. Set on:
	// SchedulerProfile Progressing=False; Scheduler Progressing=False.
	ReasonUpgradeStopped = "UpgradeStopped"
	// ReasonPreviewRunning means spec.rollout.preview.mode is Guard and the change waits for its
	// preview; the running scheduler keeps its configuration meanwhile. Set on: SchedulerProfile
	// Progressing=False.
	ReasonPreviewRunning = "PreviewRunning"
	// ReasonPreviewRefused means spec.rollout.preview.mode is Guard and the change's preview
	// left more of the profile's pods unschedulable than the running configuration does, by
	// more than maxNewlyUnschedulable (or ran out of its object, memory, CPU time or time
	// budget, or failed): the change is not rolled out and the running scheduler keeps running.
	// The message names a few of the pods with the scheduler's reason, or the budget and its
	// flag; changing the spec, or the mode, decides again. Set on: SchedulerProfile
	// Progressing=False.
	ReasonPreviewRefused = "PreviewRefused"
)

// Reasons of the Advisory condition.
const (
	// ReasonAdviceFound means at least one check of the profile doctor fired; the message lists
	// the codes, and status.advice the findings. Set on: SchedulerProfile Advisory=True.
	ReasonAdviceFound = "AdviceFound"
	// ReasonNoAdvice means no check fired, but those the annotation
	// scheduling.schedops.io/advice-ignore silences. Set on: SchedulerProfile Advisory=False.
	ReasonNoAdvice = "NoAdvice"
	// ReasonAdviceNotChecked means the latest spec has no valid configuration to check (see
	// ConfigValid), or its advice could not be worked out (the message says why), so it has no
	// advice. Set on: SchedulerProfile Advisory=Unknown.
	ReasonAdviceNotChecked = "NotChecked"
)

// Reasons of the Degraded condition.
const (
	// ReasonAsExpected means nothing needs attention. Set on: SchedulerProfile Degraded=False;
	// Scheduler Degraded=False.
	ReasonAsExpected = "AsExpected"
	// ReasonInvalidConfigNotRolledOut means a new configuration is invalid and the previous one
	// keeps running; on a Scheduler, the combined configuration of its members, or its own
	// settings. Set on: SchedulerProfile Degraded=True; Scheduler Degraded=True.
	ReasonInvalidConfigNotRolledOut = "InvalidConfigNotRolledOut"
	// ReasonProgressDeadlineExceeded means the rollout did not finish within the Deployment's
	// progress deadline. Set on: SchedulerProfile Degraded=True; Scheduler Degraded=True.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonApplyFailed means a valid configuration could not be applied (permissions, quota, a
	// webhook); the message has the error, and the operator retries. Set on: SchedulerProfile
	// Degraded=True; Scheduler Degraded=True.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonRolloutFailed means a new revision of the scheduler did not become available (the
	// message says why) and the Deployment was returned to the last revision that ran available,
	// or was not, since a Secret that revision mounts no longer consents (status.rollbackRefusal).
	// Set on: SchedulerProfile Degraded=True; Scheduler Degraded=True.
	ReasonRolloutFailed = "RolloutFailed"
	// ReasonUnsupportedVersionSkew means the scheduler is more than one minor older than the
	// cluster's kube-apiserver, beyond what the version skew policy supports; it is rolled out all
	// the same, and the operator (which ships the scheduler) should be upgraded. Set on:
	// SchedulerProfile Degraded=True; Scheduler Degraded=True.
	ReasonUnsupportedVersionSkew = "UnsupportedVersionSkew"
	// ReasonSchedulerDeleting means the Scheduler that spec.schedulerRef names is being deleted:
	// the profile is served until the Scheduler's Deployment is gone, and then by nothing. Set on:
	// SchedulerProfile Degraded=True.
	ReasonSchedulerDeleting = "SchedulerDeleting"
)
