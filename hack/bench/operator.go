package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/api/scheme"
	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/stats"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

const (
	// operatorNamespace is where the operator puts the schedulers' objects.
	operatorNamespace = operatorenv.Namespace
	// profileController is the name of the SchedulerProfile controller in the controller-runtime
	// metrics.
	profileController = "schedulerprofile"
	// quiet is how long the reconcile count must stay still for the operator to count as idle.
	quiet = 3 * time.Second
)

// operatorResult is what the operator benchmark measured, passed from the child process to the
// parent as JSON.
type operatorResult struct {
	Profiles int
	// Settle is the time from the first create until every profile was ConfigValid with its
	// Deployment applied, and Reconciles the reconciles the operator made by then.
	Settle     time.Duration
	Reconciles float64
	// SettleCPU is the CPU time of the child process (the operator, and the benchmark's creates
	// and watch) in that time.
	SettleCPU time.Duration
	// SettleWrites are the operator's write requests until then, and ControlPlaneCPU the CPU
	// time of the apiserver and etcd that served them and the benchmark's creates.
	SettleWrites    int
	ControlPlaneCPU time.Duration
	// PeakRSS is the VmHWM of the child process once every profile was Available.
	PeakRSS int64
	// ResyncReconciles and ResyncWrites are the reconciles and write requests of a restarted
	// operator's pass over every settled profile; ResyncWriteSample names a few of the writes.
	ResyncReconciles  float64
	ResyncWrites      int
	ResyncWriteSample []string
	Resync            time.Duration
}

// benchOperator runs the operator benchmark o.rounds times, each in a child process (this command
// with --operator-child) on an apiserver of its own, so that the peak resident memory it reports
// is that of a process that runs the operator and little else, and turns the results into rows.
func benchOperator(ctx context.Context, o options) ([]stats.Row, error) {
	var results []operatorResult
	for round := range o.rounds {
		r, err := runOperatorChild(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", round+1, err)
		}
		fmt.Printf("Round %d/%d  %d profiles settled in %.1f s, %.1f reconciles/s, %d writes, CPU %.1f s (apiserver and etcd %.1f s), peak %.1f MiB, resync writes %d\n",
			round+1, o.rounds, r.Profiles, r.Settle.Seconds(), r.Reconciles/r.Settle.Seconds(), r.SettleWrites, r.SettleCPU.Seconds(), r.ControlPlaneCPU.Seconds(), cluster.MiB(r.PeakRSS), r.ResyncWrites)
		results = append(results, r)
	}
	return operatorRows(results), nil
}

// runOperatorChild runs one round of the operator benchmark in a child process and reads its
// result.
func runOperatorChild(ctx context.Context, o options) (operatorResult, error) {
	var r operatorResult
	err := runChild(ctx, o, "operator.json", func(out string) []string { return []string{"--operator-child=" + out} }, &r)
	return r, err
}

// operatorRows summarizes the rounds: the median of each figure, its spread, and the write
// requests of every round's resync against the goal of none.
func operatorRows(results []operatorResult) []stats.Row {
	settle := stats.Each(results, func(r operatorResult) float64 { return r.Settle.Seconds() })
	settleCPU := stats.Each(results, func(r operatorResult) float64 { return r.SettleCPU.Seconds() })
	rate := stats.Each(results, func(r operatorResult) float64 { return r.Reconciles / r.Settle.Seconds() })
	reconciles := stats.Each(results, func(r operatorResult) float64 { return r.Reconciles })
	settleWrites := stats.Each(results, func(r operatorResult) float64 { return float64(r.SettleWrites) })
	writeRate := stats.Each(results, func(r operatorResult) float64 { return float64(r.SettleWrites) / r.Settle.Seconds() })
	controlPlane := stats.Each(results, func(r operatorResult) float64 { return r.ControlPlaneCPU.Seconds() })
	busy := stats.Each(results, func(r operatorResult) float64 {
		return (r.ControlPlaneCPU + r.SettleCPU).Seconds() / (r.Settle.Seconds() * float64(runtime.NumCPU()))
	})
	peak := stats.Each(results, func(r operatorResult) float64 { return cluster.MiB(r.PeakRSS) })
	writes := stats.Each(results, func(r operatorResult) float64 { return float64(r.ResyncWrites) })
	resync := stats.Each(results, func(r operatorResult) float64 { return r.Resync.Seconds() })
	none := true
	var sample []string
	for _, r := range results {
		none = none && r.ResyncWrites == 0
		sample = append(sample, r.ResyncWriteSample...)
	}
	writesNote := "goal 0: " + stats.Verdict(none)
	if len(sample) > 0 {
		writesNote += "; " + strings.Join(sample[:min(len(sample), 3)], ", ")
	}
	profiles := results[0].Profiles
	const name = "operator"
	return []stats.Row{
		{Benchmark: name, Measure: fmt.Sprintf("%d profiles created at once: all ConfigValid, Deployment applied", profiles),
			Value: stats.Summarize(settle), Unit: "s", Decimals: 1, Note: settleGoal(profiles, stats.Summarize(settle).Median, stats.Summarize(controlPlane).Median) +
				"operator in a child process (controllers.SetupManager), envtest; rounds: " + stats.Format(1, settle)},
		{Benchmark: name, Measure: "  CPU of the operator's process until then", Value: stats.Summarize(settleCPU), Unit: "s", Decimals: 1,
			Note: "user+system, with the benchmark's creates and its watch of the profiles; rounds: " + stats.Format(1, settleCPU)},
		{Benchmark: name, Measure: "  write requests of the operator until then", Value: stats.Summarize(settleWrites), Decimals: 0,
			Note: "server-side applies and status writes, counted on the wire; per second: " + stats.Format(0, writeRate)},
		{Benchmark: name, Measure: "  CPU of the apiserver and etcd until then", Value: stats.Summarize(controlPlane), Unit: "s", Decimals: 1,
			Note: fmt.Sprintf("with the operator's process, the share of the %d cores' time they took: %s; rounds: %s", runtime.NumCPU(), stats.Format(2, busy), stats.Format(1, controlPlane))},
		{Benchmark: name, Measure: "  reconciles per second until then", Value: stats.Summarize(rate), Unit: "/s", Decimals: 1,
			Note: "reconciles (controller_runtime_reconcile_total) per round: " + stats.Format(0, reconciles)},
		{Benchmark: name, Measure: "  peak resident memory (VmHWM)", Value: stats.Summarize(peak), Unit: "MiB", Decimals: 1,
			Note: "of the process running the operator and the benchmark's client"},
		{Benchmark: name, Measure: fmt.Sprintf("steady-state resync of all %d: write requests", profiles), Value: stats.Summarize(writes), Decimals: 0,
			Note: fmt.Sprintf("%s; by a restarted operator, in %s s per round", writesNote, stats.Format(1, resync))},
	}
}

// settleGoal is the goal of the time to settle, which is set for 1000 profiles: under 20 s. When
// it is not met, it says how long the apiserver and etcd alone would have taken on every core of
// this machine, with their median CPU time until then.
func settleGoal(profiles int, median, controlPlaneCPU float64) string {
	if profiles != 1000 {
		return ""
	}
	if median < 20 {
		return "goal < 20 s: met; "
	}
	return fmt.Sprintf("goal < 20 s: NOT met (the apiserver and etcd alone took %.1f CPU-s for the operator's writes, %.1f s on all %d cores); ",
		controlPlaneCPU, controlPlaneCPU/float64(runtime.NumCPU()), runtime.NumCPU())
}

// startClusterWithCRDs starts an envtest apiserver and etcd of their own under the directory
// name, with the operator's CRDs, and returns them with a client of the administrator. The caller
// stops the cluster.
func startClusterWithCRDs(o options, name string) (*cluster.Cluster, client.Client, error) {
	c, err := cluster.Start(o.assets, filepath.Join(o.dir, name), o.crds)
	if err != nil {
		return nil, nil, err
	}
	admin, err := client.New(c.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		c.Stop()
		return nil, nil, err
	}
	return c, admin, nil
}

// operatorChild is the operator benchmark proper. It creates o.operatorProfiles profiles at once
// on an envtest apiserver with the operator running in this process, waits until each is
// ConfigValid with its Deployment applied, marks the Deployments available (no Deployment
// controller runs) and waits until the operator is idle. Then it restarts the operator, whose
// new cache lists every profile and reconciles each once, and counts the write requests of that
// pass: the steady state, in which nothing should be written.
func operatorChild(ctx context.Context, o options) error {
	c, admin, err := startClusterWithCRDs(o, "operator")
	if err != nil {
		return err
	}
	defer c.Stop()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		return err
	}
	profiles, err := watchProfiles(ctx, c.Config)
	if err != nil {
		return err
	}
	r := operatorResult{Profiles: o.operatorProfiles}
	if err := profiled(o.operatorCPUProfile, "settle", func() error { return settleProfiles(ctx, c.Config, admin, profiles, o, &r) }); err != nil {
		return err
	}
	if err := resyncProfiles(ctx, c.Config, o, &r); err != nil {
		return err
	}
	fmt.Printf("Resync: %.0f reconciles in %s, %d write requests\n", r.ResyncReconciles, r.Resync.Round(100*time.Millisecond), r.ResyncWrites)

	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(o.operatorChild, data, 0o644)
}

// settleProfiles runs the operator while r.Profiles profiles are created at once, until each is
// Available and the operator is idle, and records the time to settle, the reconciles and the peak
// memory of this process.
func settleProfiles(ctx context.Context, cfg *rest.Config, admin client.Client, profiles client.Reader, o options, r *operatorResult) error {
	var requests testutil.RequestLog
	stop, err := startOperator(ctx, requests.Wrap(cfg))
	if err != nil {
		return err
	}
	defer stop()
	_, _ = requests.Take()
	controlPlane0, err := cluster.ChildrenCPU()
	if err != nil {
		return err
	}
	cpu0, begin := cpuTime(), time.Now()
	err = cluster.Parallel(ctx, r.Profiles, func(ctx context.Context, i int) error {
		// The memory benchmark's kinds of profile, each named on its own.
		p := benchProfile(i % 20)
		p.Name = fmt.Sprintf("bench-%03d", i)
		return admin.Create(ctx, p)
	})
	if err != nil {
		return fmt.Errorf("creating the profiles: %w", err)
	}
	fmt.Printf("Created %d profiles in %s\n", r.Profiles, time.Since(begin).Round(100*time.Millisecond))
	if err := waitProfiles(ctx, admin, profiles, o, "ConfigValid with a Deployment", configValid); err != nil {
		return err
	}
	r.Settle, r.Reconciles, r.SettleCPU = time.Since(begin), reconciles(), cpuTime()-cpu0
	controlPlane, err := cluster.ChildrenCPU()
	if err != nil {
		return err
	}
	writes, _ := requests.Take()
	r.SettleWrites, r.ControlPlaneCPU = len(writes), controlPlane-controlPlane0
	fmt.Printf("All ConfigValid with their Deployment in %s, %.0f reconciles\n", r.Settle.Round(100*time.Millisecond), r.Reconciles)
	if err := markDeploymentsAvailable(ctx, admin); err != nil {
		return err
	}
	if err := waitProfiles(ctx, admin, profiles, o, "Available", available); err != nil {
		return err
	}
	waitIdle(ctx)
	m, err := cluster.ReadMemory("self")
	if err != nil {
		return err
	}
	r.PeakRSS = m.HWM
	return nil
}

// resyncProfiles starts the operator again, whose new cache reconciles every settled profile
// once, and records that pass's reconciles and write requests: the steady state.
func resyncProfiles(ctx context.Context, cfg *rest.Config, o options, r *operatorResult) error {
	var requests testutil.RequestLog
	before := reconciles()
	resync := time.Now()
	stop, err := startOperator(ctx, requests.Wrap(cfg))
	if err != nil {
		return err
	}
	defer stop()
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, o.deadline, true, func(context.Context) (bool, error) {
		return reconciles()-before >= float64(r.Profiles), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the restarted operator to reconcile every profile: %w", err)
	}
	r.Resync = time.Since(resync)
	waitIdle(ctx)
	r.ResyncReconciles = reconciles() - before
	writes, _ := requests.Take()
	r.ResyncWrites = len(writes)
	r.ResyncWriteSample = writes[:min(len(writes), 5)]
	return nil
}

// startOperator starts the operator as main wires it (controllers.SetupManager on the options of
// ManagerOptions), without endpoints and logs, and with controller names allowed to repeat so
// that a second manager can follow the first in this process. It returns once the cache has
// synced; stop stops the manager and waits for it.
func startOperator(ctx context.Context, cfg *rest.Config) (stop func(), err error) {
	return startOperatorWith(ctx, cfg, operatorOptions())
}

// operatorOptions are the options startOperator runs the operator with: main's defaults.
func operatorOptions() controllers.ManagerOptions {
	return controllers.ManagerOptions{Namespace: operatorNamespace, SchedulerImage: "scheduler-profile-operator:bench",
		MetricsBindAddress: "0", HealthProbeBindAddress: "0"}
}

// startOperatorWith is startOperator with options o.
func startOperatorWith(ctx context.Context, cfg *rest.Config, o controllers.ManagerOptions) (stop func(), err error) {
	opts := o.ControllerRuntimeOptions()
	opts.Logger = logr.Discard()
	opts.Controller.SkipNameValidation = ptr.To(true)
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := controllers.SetupManager(mgr, o); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop = func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "bench: the operator stopped with:", err)
		}
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		stop()
		return nil, fmt.Errorf("the operator's cache did not sync")
	}
	return stop, nil
}

func configValid(p *v1alpha1.SchedulerProfile) bool {
	return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionConfigValid) && p.Status.DeploymentName != ""
}

func available(p *v1alpha1.SchedulerProfile) bool {
	return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionAvailable)
}

// watchProfiles starts a cache of the profiles for the benchmark's waits: a watch costs this
// process, which the operator shares, one decode per change, where listing every profile from
// the apiserver four times a second cost as much CPU as the operator's passes.
func watchProfiles(ctx context.Context, cfg *rest.Config) (client.Reader, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	if _, err := c.GetInformer(ctx, &v1alpha1.SchedulerProfile{}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the benchmark's cache of profiles did not sync")
	}
	return c, nil
}

// waitProfiles polls the cache of profiles until every profile is done, and, for configValid,
// until the Deployment named in each status exists.
func waitProfiles(ctx context.Context, admin client.Client, profiles client.Reader, o options, what string, done func(*v1alpha1.SchedulerProfile) bool) error {
	var n int
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, o.deadline, true, func(ctx context.Context) (bool, error) {
		var list v1alpha1.SchedulerProfileList
		if err := profiles.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil { // only read
			return false, err
		}
		n = 0
		for i := range list.Items {
			if done(&list.Items[i]) {
				n++
			}
		}
		return n == o.operatorProfiles, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d profiles %s: %w", n, o.operatorProfiles, what, err)
	}
	var deployments appsv1.DeploymentList
	if err := admin.List(ctx, &deployments, client.InNamespace(operatorNamespace), client.HasLabels{v1alpha1.LabelProfile}); err != nil {
		return err
	}
	if len(deployments.Items) != o.operatorProfiles {
		return fmt.Errorf("%d Deployments for %d profiles", len(deployments.Items), o.operatorProfiles)
	}
	return nil
}

// markDeploymentsAvailable writes the status the Deployment controller (absent in envtest)
// would write once every replica of the current template is available.
func markDeploymentsAvailable(ctx context.Context, admin client.Client) error {
	var list appsv1.DeploymentList
	if err := admin.List(ctx, &list, client.InNamespace(operatorNamespace), client.HasLabels{v1alpha1.LabelProfile}); err != nil {
		return err
	}
	return cluster.Parallel(ctx, len(list.Items), func(ctx context.Context, i int) error {
		return testutil.MarkDeploymentAvailable(ctx, admin, client.ObjectKeyFromObject(&list.Items[i]))
	})
}

// reconciles is the SchedulerProfile controller's controller_runtime_reconcile_total, summed
// over results, from the registry that every manager of this process counts into.
func reconciles() float64 {
	return reconcilesOf(profileController)
}

// reconcilesOf is a controller's controller_runtime_reconcile_total, summed over results.
func reconcilesOf(controller string) float64 {
	total, err := testutil.CounterSum("controller_runtime_reconcile_total", "controller", controller)
	if err != nil {
		return 0
	}
	return total
}

// waitIdle waits until the reconcile count has not moved for quiet.
func waitIdle(ctx context.Context) {
	waitIdleOf(ctx, reconciles)
}

// waitIdleOf waits until count has not moved for quiet.
func waitIdleOf(ctx context.Context, count func() float64) {
	last, since := count(), time.Now()
	_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, false, func(context.Context) (bool, error) {
		if n := count(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= quiet, nil
	})
}
