package core

import (
	"fmt"
	"sync"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/schedops/scheduler-profile-operator/controllers/assignment"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
)

// Options are what the reconcilers run with; the composition root (controllers.SetupManager)
// builds them once from the operator's settings.
type Options struct {
	// Planner plans for both reconcilers (and, handed on by the composition root, for admission):
	// the same settings, memos, previews, served APIs and metrics. Its Reader is mgr's client.
	Planner plan.Planner
	// Discovery answers the apiserver's version, for the version skew policy.
	Discovery Discovery
	// Rollout decides when a rollout has failed for good; zero fields take the defaults.
	Rollout RolloutThresholds
	// UpgradeMaxInFlight is how many schedulers a change of the scheduler image rolls at a time;
	// 0 is DefaultUpgradeMaxInFlight.
	UpgradeMaxInFlight int
	// Workers is how many passes each reconciler runs at once; 0 is DefaultMaxConcurrentReconciles.
	Workers int
	// Stranded counts the pending pods stranded on each scheduler name, for the profiles' status;
	// nil counts none.
	Stranded *assignment.StrandedPods
	// Recorder records the reconcilers' events.
	Recorder events.EventRecorder
}

// Setup adds the SchedulerProfile and Scheduler reconcilers and the controller that deletes the
// leases no scheduler uses to mgr. Both reconcilers share one upgrade lock, so that the wave
// counts the schedulers in flight once for both kinds.
func Setup(mgr ctrl.Manager, o Options) error {
	objects := processObjects{client: mgr.GetClient(), Planner: o.Planner, rollout: o.Rollout, upgradeMaxInFlight: o.UpgradeMaxInFlight, upgradeMu: &sync.Mutex{}}
	profiles := newSchedulerProfileReconciler(objects, o.Discovery, o.Recorder)
	profiles.workers = o.Workers
	profiles.stranded = o.Stranded
	if err := profiles.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the SchedulerProfile controller: %w", err)
	}
	schedulers := newSchedulerReconciler(objects, o.Discovery, o.Recorder)
	schedulers.workers = o.Workers
	if err := schedulers.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Scheduler controller: %w", err)
	}
	if err := newLeaseReconciler(mgr.GetClient(), mgr.GetAPIReader(), o.Planner.Settings.Namespace).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Lease controller: %w", err)
	}
	return nil
}
