package controllers

import (
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/controllers/core"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
)

// What main, pkg/operator and the tests use of the rooms under controllers/, under the names the
// operator's settings have always had.

// RolloutThresholds decide when a scheduler rollout has failed for good (core.RolloutThresholds).
type RolloutThresholds = core.RolloutThresholds

// Discovery answers which APIs and which version the apiserver serves (core.Discovery).
type Discovery = core.Discovery

// ServerVersionFunc answers the apiserver's version (core.ServerVersionFunc).
type ServerVersionFunc = core.ServerVersionFunc

// SchedulerProfileReconciler is the SchedulerProfile reconciler (core.SchedulerProfileReconciler).
type SchedulerProfileReconciler = core.SchedulerProfileReconciler

// The defaults of the rollout thresholds, the upgrade wave and the reconcilers' workers.
const (
	DefaultRolloutDeadline         = core.DefaultRolloutDeadline
	DefaultUnschedulableTimeout    = core.DefaultUnschedulableTimeout
	DefaultStartErrorTimeout       = core.DefaultStartErrorTimeout
	DefaultCrashLoopRestarts       = core.DefaultCrashLoopRestarts
	DefaultUpgradeMaxInFlight      = core.DefaultUpgradeMaxInFlight
	DefaultMaxConcurrentReconciles = core.DefaultMaxConcurrentReconciles
	// MaxMembersPerScheduler and MaxConfigBytes bound a Scheduler (plan's).
	MaxMembersPerScheduler = plan.MaxMembersPerScheduler
	MaxConfigBytes         = plan.MaxConfigBytes
)

// NewSchedulerProfileReconciler returns a SchedulerProfile reconciler that runs schedulers in
// namespace with image, outside a manager set up by SetupManager: a test runs its passes by hand.
func NewSchedulerProfileReconciler(c client.Client, d Discovery, recorder events.EventRecorder, namespace, image string) *SchedulerProfileReconciler {
	return core.NewSchedulerProfileReconciler(c, d, recorder, namespace, image)
}
