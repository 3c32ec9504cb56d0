// Command manager is the scheduler-profile-operator: it turns SchedulerProfiles into validated
// kube-scheduler configurations and the scheduler Deployments that run them.
//
// `manager render -f profile.yaml` renders and validates profiles offline, without a cluster, and
// `manager plugins` lists the plugins a profile can use.
package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "render":
			os.Exit(runRender(os.Args[2:], os.Stdout, os.Stderr))
		case "plugins":
			os.Exit(runPlugins(os.Args[2:], os.Stdout, os.Stderr))
		}
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(schedulingv1alpha1.AddToScheme(scheme))
	return scheme
}

func run(args []string) error {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	var metricsAddr, probeAddr string
	var leaderElect bool
	fs.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "The address the metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the health probe endpoint binds to.")
	fs.BoolVar(&leaderElect, "leader-elect", false, "Enable leader election, so that only one operator replica reconciles.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	// Validation builds kube-scheduler's framework, which logs through klog at info level on
	// every pass; those lines are details of the operator's work, so they go to its log at debug.
	klog.SetLogger(ctrl.Log.WithName("scheduler-framework").V(1))

	namespace := os.Getenv("OPERATOR_NAMESPACE")
	if namespace == "" {
		return fmt.Errorf("OPERATOR_NAMESPACE must name the namespace of the managed schedulers")
	}
	image := os.Getenv("RELATED_IMAGE_SCHEDULER")
	if image == "" {
		return fmt.Errorf("RELATED_IMAGE_SCHEDULER must name the image of the scheduler (the operator's own image holds it)")
	}

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  newScheme(),
		Cache:                   controllers.CacheOptions(namespace),
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        controllers.LeaderElectionID,
		LeaderElectionNamespace: namespace,
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	reconciler := controllers.NewSchedulerProfileReconciler(mgr.GetClient(), mgr.GetEventRecorder(controllers.FieldManager), namespace, image)
	if err := reconciler.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the SchedulerProfile controller: %w", err)
	}
	schedulers := controllers.NewSchedulerReconciler(mgr.GetClient(), mgr.GetEventRecorder(controllers.FieldManager), namespace, image)
	if err := schedulers.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Scheduler controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}

	ctrl.Log.WithName("setup").Info("Starting the manager", "namespace", namespace)
	return mgr.Start(ctrl.SetupSignalHandler())
}
