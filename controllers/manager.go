// Package controllers is the operator's composition root: SetupManager builds, once, from the
// operator's settings (ManagerOptions), the planner that the reconcilers and admission share and
// hands it to the rooms below: the reconcilers (core), namespace assignment (assignment), the
// previews (preview), the webhooks' admission (admission, through setupWebhook), the certificate
// copy (certs), the monitoring objects (monitoring) and the metrics (metrics). Callers outside
// import this package only.
package controllers

import (
	"context"
	"fmt"
	"time"

	"github.com/schedops/scheduler-profile-operator/controllers/assignment"
	"github.com/schedops/scheduler-profile-operator/controllers/core"
	"github.com/schedops/scheduler-profile-operator/controllers/monitoring"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/controllers/preview"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/schedops/scheduler-profile-operator/api/scheme"
	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/metrics"
)

// ManagerOptions are the operator's settings, which main reads from its flags and environment.
type ManagerOptions struct {
	// Namespace is where the managed schedulers run (OPERATOR_NAMESPACE), and where the
	// operator's own leader-election lease is.
	Namespace string
	// SchedulerImage is the image of the scheduler Deployments (RELATED_IMAGE_SCHEDULER).
	SchedulerImage string
	// MetricsBindAddress is where the metrics are served; "0" turns them off.
	MetricsBindAddress string
	// MetricsSecure serves the metrics over HTTPS to authenticated and authorized callers only.
	MetricsSecure bool
	// MetricsCertDir holds the metrics server's tls.crt and tls.key; without them the server
	// makes a self-signed certificate.
	MetricsCertDir string
	// HealthProbeBindAddress is where /healthz and /readyz are served; "0" turns them off.
	HealthProbeBindAddress string
	// LeaderElection lets only one replica of the operator reconcile at a time.
	LeaderElection bool
	// Webhook serves the validating admission webhook; nil turns it off.
	Webhook *WebhookOptions
	// ServerVersion is where the reconcilers read the apiserver's version, for the version skew
	// policy; nil asks the apiserver's discovery. Tests set it to fake another version.
	ServerVersion discovery.ServerVersionInterface
	// Rollout decides when a scheduler rollout has failed for good and is rolled back; zero
	// fields take the defaults (DefaultRolloutDeadline and the others).
	Rollout RolloutThresholds
	// UpgradeMaxInFlight is how many schedulers a change of SchedulerImage (an operator upgrade
	// or downgrade) rolls at a time; 0 is DefaultUpgradeMaxInFlight. Users' changes are not paced.
	UpgradeMaxInFlight int
	// AllowedPriorityClasses are the priority classes a profile or a Scheduler may give its
	// scheduler pods; empty allows none, so the pods get the cluster's default priority.
	AllowedPriorityClasses []string
	// SchedulerPodCaps bound the resources and tolerations that a profile or a Scheduler may give
	// its scheduler pods; zero fields take the defaults (plan.DefaultMaxSchedulerCPU and the others).
	SchedulerPodCaps plan.SchedulerPodCaps
	// MaxConcurrentReconciles is how many passes each controller (profiles, Schedulers) runs at
	// once; 0 is DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// Preview bounds the previews of profiles' changes; zero fields take the defaults
	// (DefaultPreviewMaxPods, DefaultPreviewCPULimit, DefaultPreviewTimeout).
	Preview PreviewOptions
	// StrandedPodGrace is how long a pending pod stays stranded on a scheduler name nobody serves
	// before the operator deletes it for its controller to recreate; 0 deletes none.
	StrandedPodGrace time.Duration
	// StrandedInterval is how often the pending pods are looked at for stranded ones; 0 is
	// assignment.DefaultStrandedInterval. Not a flag: tests set a short one.
	StrandedInterval time.Duration
	// MonitoringObjects has the operator apply its ServiceMonitors and PrometheusRule
	// (config/prometheus) into its namespace once the cluster serves monitoring.coreos.com/v1:
	// the OLM bundle cannot ship them (--monitoring-objects).
	MonitoringObjects bool
	// MonitoringRecheck is how often the operator asks whether the cluster serves that API, until
	// it does; 0 is monitoring.Recheck. Not a flag: tests set a short one.
	MonitoringRecheck time.Duration
	// MaxMembersPerScheduler is how many profiles a Scheduler serves; 0 is
	// MaxMembersPerScheduler. Not a flag: tests set a small one.
	MaxMembersPerScheduler int
}

// ControllerRuntimeOptions returns the options of the operator's manager: its scheme, a cache of
// only the objects it manages (CacheOptions), its endpoints and its leader election.
func (o ManagerOptions) ControllerRuntimeOptions() ctrl.Options {
	opts := ctrl.Options{
		Scheme:                  scheme.New(),
		Cache:                   core.CacheOptions(o.Namespace),
		Metrics:                 o.metricsServerOptions(),
		HealthProbeBindAddress:  o.HealthProbeBindAddress,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        schedulingv1alpha1.LeaderElectionID,
		LeaderElectionNamespace: o.Namespace,
	}
	if o.Webhook != nil {
		opts.WebhookServer = o.Webhook.server()
	}
	return opts
}

// SetupManager adds the SchedulerProfile and Scheduler controllers, the controller that deletes
// the leases no scheduler uses, the validating webhook (when o.Webhook is set) and the health and
// readiness checks to mgr.
//
// It also sends klog's output to mgr's logger at debug level: validation builds kube-scheduler's
// framework, which logs through klog at info level on every pass, and those lines are details of
// the operator's work. klog's logger is process-wide; the operator runs one manager.
func SetupManager(mgr ctrl.Manager, o ManagerOptions) error {
	klog.SetLogger(mgr.GetLogger().WithName("scheduler-framework").V(1))
	apis, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("creating the discovery client: %w", err)
	}
	d := core.Discovery(apis)
	if o.ServerVersion != nil {
		d = core.WithServerVersion(apis, o.ServerVersion)
	}
	// One Planner, built here from o, is what both reconcilers and admission plan and render
	// with: the same settings, previews, memos and metrics; its APIs, which remember the APIs
	// found served, answer assignment and monitoring too.
	planner := plan.Planner{Reader: mgr.GetClient(), APIs: plan.NewServedAPIs(d), Settings: o.settings(), Memos: plan.NewMemos(), Metrics: metrics.New()}
	if err := planner.Metrics.Register(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("registering the operator's metrics: %w", err)
	}
	if err := core.IndexObjects(context.Background(), mgr.GetFieldIndexer(), o.SchedulerImage, planner.Memos); err != nil {
		return err
	}
	if planner.Previews, err = preview.Setup(mgr, o.Preview); err != nil {
		return err
	}
	recorder := mgr.GetEventRecorder(schedulingv1alpha1.FieldManager)
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("creating the client of stranded pods: %w", err)
	}
	stranded := assignment.NewStrandedPods(mgr.GetClient(), direct, recorder, planner.Metrics, o.StrandedPodGrace, o.StrandedInterval)
	if err := mgr.Add(stranded); err != nil {
		return fmt.Errorf("adding the finder of stranded pods: %w", err)
	}
	if err := core.Setup(mgr, core.Options{Planner: planner, Discovery: d, Rollout: o.Rollout, UpgradeMaxInFlight: o.UpgradeMaxInFlight,
		Workers: o.MaxConcurrentReconciles, Stranded: stranded, Recorder: recorder}); err != nil {
		return err
	}
	assign := assignment.NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), o.Namespace, planner.APIs, stranded, planner.Memos.ProfilesIn)
	if err := assign.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the assignment controller: %w", err)
	}
	if o.MonitoringObjects {
		if err := mgr.Add(&monitoring.Objects{Client: mgr.GetClient(), APIs: planner.APIs, Namespace: o.Namespace, Recheck: o.MonitoringRecheck}); err != nil {
			return fmt.Errorf("adding the monitoring objects: %w", err)
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	if o.Webhook != nil {
		return setupWebhook(mgr, o, planner)
	}
	return nil
}

// settings are the settings of the scheduler processes that o gives.
func (o ManagerOptions) settings() plan.Settings {
	return plan.Settings{Namespace: o.Namespace, Image: o.SchedulerImage, AllowedPriorityClasses: o.AllowedPriorityClasses, Caps: o.SchedulerPodCaps, MaxMembers: o.MaxMembersPerScheduler}
}

// IndexFields adds to a manager's cache the field indexes that the reconcilers and the webhook
// read through, before the manager starts: SetupManager does, and so does a test that runs a
// reconciler by hand on the cache of a manager with no controller (its parsed configurations
// are not remembered; SetupManager indexes with the operator's memos).
func IndexFields(mgr ctrl.Manager, o ManagerOptions) error {
	return core.IndexObjects(context.Background(), mgr.GetFieldIndexer(), o.SchedulerImage, nil)
}

// NewManager returns the operator as main runs it: a manager with o.ControllerRuntimeOptions(),
// set up by SetupManager. The tests start the same two steps with test settings in between
// (test/framework).
func NewManager(cfg *rest.Config, o ManagerOptions) (ctrl.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, o.ControllerRuntimeOptions())
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := SetupManager(mgr, o); err != nil {
		return nil, err
	}
	return mgr, nil
}
