// Package manager is the main function of the operator's binary, the manager: it turns
// SchedulerProfiles into validated kube-scheduler configurations and the scheduler Deployments
// that run them, and validates every profile against the out-of-tree plugins it is given.
//
// `manager render -f profile.yaml` renders and validates profiles offline, without a cluster, and
// `manager plugins` lists the plugins a profile can use.
package manager

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/pkg/operator"
	"github.com/schedops/scheduler-profile-operator/scheduler/registry"
)

// Run runs the manager, with os.Args, validating profiles against kube-scheduler's in-tree
// plugins and plugins, and returns its exit code. Give it the same plugins as the scheduler's
// Run: the image that holds both binaries runs what the manager accepted. Its subcommands are
// `render`, `plugins`, `snapshot` and `simulate`; without one it runs the operator. The hidden
// `preview-worker` is the operator's own: each preview runs in a child process of it.
func Run(plugins ...operator.Plugin) int {
	if err := registry.Use(plugins); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		return 1
	}
	return command(os.Args[1:], os.Stdout, os.Stderr)
}

// command runs the manager with args, once its plugins are in use.
func command(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "render":
			return runRender(args[1:], stdout, stderr)
		case "plugins":
			return runPlugins(args[1:], stdout, stderr)
		case "snapshot":
			return runSnapshot(args[1:], stdout, stderr)
		case "simulate":
			return runSimulate(args[1:], stdout, stderr)
		case controllers.PreviewWorkerCommand:
			// Hidden: the operator runs its previews in this subcommand of itself.
			return controllers.RunPreviewWorker(os.Stdin, stdout, stderr)
		}
	}
	if err := run(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // the usage is printed
		}
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func run(args []string) error {
	opts, zapOpts, err := managerOptions(args, os.Getenv)
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(zapOpts)))
	if limit := setMemoryLimit(opts.Preview.MemoryLimit); limit > 0 {
		ctrl.Log.WithName("setup").Info("Set the memory limit from the container's, less the preview's memory budget", "bytes", limit)
	}
	mgr, err := controllers.NewManager(ctrl.GetConfigOrDie(), opts)
	if err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("Starting the manager", "namespace", opts.Namespace)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// managerOptions reads the operator's settings from its flags and from the environment through
// getenv, and the logging flags.
func managerOptions(args []string, getenv func(string) string) (controllers.ManagerOptions, *zap.Options, error) {
	var opts controllers.ManagerOptions
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", ":8443", "The address the metrics endpoint binds to; 0 disables it.")
	fs.BoolVar(&opts.MetricsSecure, "metrics-secure", true, "Serve the metrics over HTTPS to callers allowed to get the /metrics nonResourceURL; false serves plain HTTP to anyone.")
	fs.StringVar(&opts.MetricsCertDir, "metrics-cert-dir", "", "The directory with the metrics server's tls.crt and tls.key; without them a self-signed certificate is used.")
	fs.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "The address the health probe endpoint binds to.")
	fs.BoolVar(&opts.LeaderElection, "leader-elect", false, "Enable leader election, so that only one operator replica reconciles.")
	enableWebhook := fs.Bool("enable-webhook", true, "Serve the validating admission webhook of SchedulerProfiles and Schedulers; false when the apiserver cannot reach the operator (make run).")
	disableRotation := fs.Bool("disable-cert-rotation", false, "Do not create and renew the webhook's serving certificate: it is provided in --webhook-cert-dir (OLM does so).")
	wh := controllers.WebhookOptions{}
	fs.StringVar(&wh.Host, "webhook-host", "", "The address the webhook is served on; empty is every address.")
	fs.IntVar(&wh.Port, "webhook-port", controllers.DefaultWebhookPort, "The port the webhook is served on.")
	fs.StringVar(&wh.CertDir, "webhook-cert-dir", "", "The directory of the webhook's tls.crt and tls.key (default <temp dir>/k8s-webhook-server/serving-certs).")
	fs.StringVar(&wh.SecretName, "webhook-cert-secret", controllers.DefaultWebhookSecret, "The Secret, in the operator's namespace, that holds the rotated certificate.")
	fs.StringVar(&wh.ConfigName, "webhook-config-name", controllers.DefaultWebhookConfigName, "The ValidatingWebhookConfiguration whose caBundle the rotation sets.")
	fs.StringVar(&wh.ServiceName, "webhook-service-name", controllers.DefaultWebhookServiceName, "The Service, in the operator's namespace, that the certificate is issued for.")
	fs.DurationVar(&opts.Rollout.Deadline, "rollout-deadline", controllers.DefaultRolloutDeadline, "How long a new scheduler revision may take to become available, from when the operator applied it, before it is rolled back; for owners that set no rolloutDeadlineSeconds.")
	fs.DurationVar(&opts.Rollout.Unschedulable, "rollout-unschedulable-timeout", controllers.DefaultUnschedulableTimeout, "How long a new scheduler pod may stay Unschedulable (a preemption, a node being added) before its rollout is rolled back.")
	fs.DurationVar(&opts.StrandedPodGrace, "stranded-pod-grace", 0, "How long a pending pod that namespace assignment sent to a scheduler name no running scheduler serves any more may wait before the operator deletes it, when a controller owns it and it is in no PodGroup, so that the controller recreates it and the new pod falls back; 0 deletes none (the pods are reported only).")
	fs.BoolVar(&opts.MonitoringObjects, "monitoring-objects", false, "Apply the operator's ServiceMonitors and PrometheusRule (config/prometheus) into its namespace once the cluster serves the Prometheus Operator's API (monitoring.coreos.com/v1), asking again every minute until it does; the OLM bundle sets it, since it cannot ship them. Off: install config/prometheus yourself.")
	fs.IntVar(&opts.UpgradeMaxInFlight, "upgrade-max-in-flight", controllers.DefaultUpgradeMaxInFlight, "How many scheduler Deployments a new scheduler image (an operator upgrade or downgrade) rolls at a time, in the order of their names, the next once those are available; the first rollback stops it. Users' own changes are not paced.")
	fs.DurationVar(&opts.Rollout.StartError, "rollout-start-error-timeout", controllers.DefaultStartErrorTimeout, "How long a new scheduler pod may fail to pull its image or create its container, from when it was bound, before its rollout is rolled back.")
	crashLoopRestarts := fs.Int("rollout-crash-loop-restarts", controllers.DefaultCrashLoopRestarts, "The restart count at which a new scheduler container in CrashLoopBackOff has its rollout rolled back.")
	fs.IntVar(&opts.Preview.MaxPods, "preview-max-pods", controllers.DefaultPreviewMaxPods, "How many of a profile's pods the preview of a change simulates (spec.rollout.preview): the first in queue order; the status says when there were more.")
	fs.DurationVar(&opts.Preview.Timeout, "preview-timeout", controllers.DefaultPreviewTimeout, "The wall-clock time budget of one preview, a safety bound: reading the cluster and simulating both configurations. A preview past it decides nothing, and Guard does not roll the change out.")
	fs.DurationVar(&opts.Preview.RefreshInterval, "preview-refresh-interval", controllers.DefaultPreviewRefreshInterval, "How soon a preview that holds a change (refused, or incomplete) is run again once a node was added, removed or relabelled or a PriorityClass changed; without such a change, it is run again after ten intervals.")
	fs.DurationVar(&opts.Preview.CPULimit, "preview-cpu-limit", controllers.DefaultPreviewCPULimit, "The CPU time budget that the two simulations of one preview share, counted on the preview's worker process. A preview past it decides nothing, and Guard does not roll the change out.")
	opts.Preview.MemoryLimit = controllers.DefaultPreviewMemoryLimit
	fs.Var(quantityFlag{&opts.Preview.MemoryLimit}, "preview-memory-limit", "The memory budget of a preview's worker process, a child of the operator that runs its simulations: the operator kills it past this resident memory. A preview past it decides nothing, and Guard does not roll the change out. The operator's own memory limit is 90% of its container's less this.")
	fs.IntVar(&opts.Preview.MaxObjects, "preview-max-objects", controllers.DefaultPreviewMaxObjects, "How many objects of the kinds scheduling reads (nodes, pods, services, ...) a preview reads of the cluster and sends its worker. A preview of a larger cluster decides nothing, and Guard does not roll the change out.")
	fs.IntVar(&opts.MaxConcurrentReconciles, "max-concurrent-reconciles", controllers.DefaultMaxConcurrentReconciles, "How many profiles, and how many Schedulers, the operator reconciles at once; a profile or Scheduler is never in two passes at once.")
	fs.Func("allowed-priority-classes", allowedPriorityClassesUsage, func(v string) error {
		opts.AllowedPriorityClasses = append(opts.AllowedPriorityClasses, commaList(v)...)
		return nil
	})
	capFlags(fs, &opts.SchedulerPodCaps)
	zapOpts := &zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return opts, nil, err
	}
	if *crashLoopRestarts < 1 || *crashLoopRestarts > math.MaxInt32 {
		return opts, nil, fmt.Errorf("--rollout-crash-loop-restarts must be a positive number, not %d", *crashLoopRestarts)
	}
	opts.Rollout.CrashLoopRestarts = int32(*crashLoopRestarts)
	if opts.MaxConcurrentReconciles < 1 {
		return opts, nil, fmt.Errorf("--max-concurrent-reconciles must be a positive number, not %d", opts.MaxConcurrentReconciles)
	}
	if opts.UpgradeMaxInFlight < 1 {
		return opts, nil, fmt.Errorf("--upgrade-max-in-flight must be a positive number, not %d", opts.UpgradeMaxInFlight)
	}
	if opts.Preview.RefreshInterval <= 0 {
		return opts, nil, fmt.Errorf("--preview-refresh-interval must be positive, not %s", opts.Preview.RefreshInterval)
	}
	if opts.Preview.MaxPods < 1 || opts.Preview.Timeout <= 0 || opts.Preview.CPULimit <= 0 || opts.Preview.MemoryLimit <= 0 || opts.Preview.MaxObjects < 1 {
		return opts, nil, fmt.Errorf("--preview-max-pods, --preview-timeout, --preview-cpu-limit, --preview-memory-limit and --preview-max-objects must be positive, not %d, %s, %s, %s and %d (spec.rollout.preview.mode: Off turns a profile's previews off)",
			opts.Preview.MaxPods, opts.Preview.Timeout, opts.Preview.CPULimit, quantityFlag{&opts.Preview.MemoryLimit}, opts.Preview.MaxObjects)
	}
	if err := opts.SchedulerPodCaps.Validate(); err != nil {
		return opts, nil, err
	}
	if *enableWebhook {
		wh.CertRotation = !*disableRotation
		opts.Webhook = &wh
	}
	if opts.Namespace = getenv("OPERATOR_NAMESPACE"); opts.Namespace == "" {
		return opts, nil, fmt.Errorf("OPERATOR_NAMESPACE must name the namespace of the managed schedulers")
	}
	if opts.SchedulerImage = getenv("RELATED_IMAGE_SCHEDULER"); opts.SchedulerImage == "" {
		return opts, nil, fmt.Errorf("RELATED_IMAGE_SCHEDULER must name the image of the scheduler (the operator's own image holds it)")
	}
	return opts, zapOpts, nil
}

// allowedPriorityClassesUsage is the help of --allowed-priority-classes, of the manager and of
// `manager render`, which checks profiles as the manager with that flag does.
const allowedPriorityClassesUsage = "A comma-separated list of the priority classes that profiles and Schedulers may give their scheduler pods (spec.scheduler.priorityClassName); by default none: a priority class decides whose pods the scheduler pods preempt, so the cluster admin chooses, for example system-cluster-critical."

// commaList splits a comma-separated flag value (--allowed-priority-classes and the like).
func commaList(v string) []string {
	var out []string
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" {
			out = append(out, name)
		}
	}
	return out
}
