package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/scheme"
	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/stats"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

const (
	// sharedScheduler is the Scheduler that the shared benchmark fills with members.
	sharedScheduler = "bench"
	// schedulerController is the name of the Scheduler controller in the controller-runtime metrics.
	schedulerController = "scheduler"
	// changedPercentage is what the member's change sets its percentageOfNodesToScore to.
	changedPercentage = 77
)

// sharedResult is what one child of the shared benchmark measured for a Scheduler of Members.
type sharedResult struct {
	Members int
	// Served is the time from the first create until the Scheduler's Deployment runs a
	// configuration with every member; CreateCPU the operator process's CPU from the first create
	// until its last reconcile.
	Served    time.Duration
	CreateCPU time.Duration
	// Change is the time from one member's spec change until the Deployment runs a configuration
	// with it; ChangeCPU the CPU from the change until the last reconcile it caused.
	Change    time.Duration
	ChangeCPU time.Duration
	// ChangeReconciles counts the reconciles of both controllers that the change caused.
	ChangeReconciles float64
	// Reviews are the durations of dry-run updates of a member, through the webhook.
	Reviews []time.Duration
}

// benchShared runs the shared benchmark: per round, one child process per Scheduler size in
// --shared-members, in an order that alternates between rounds, each on an apiserver of its own,
// so that neither the memos nor the apiserver's state of one size help the next.
func benchShared(ctx context.Context, o options) ([]stats.Row, error) {
	sizes, err := sharedSizes(o.sharedMembers)
	if err != nil {
		return nil, err
	}
	results := map[int][]sharedResult{}
	for round := range o.rounds {
		for _, i := range order(len(sizes), round) {
			var r sharedResult
			flags := func(out string) []string {
				return []string{"--shared-child-members=" + strconv.Itoa(sizes[i]), "--child-out=" + out}
			}
			if err := runChild(ctx, o, "shared.json", flags, &r); err != nil {
				return nil, fmt.Errorf("round %d, %d members: %w", round+1, sizes[i], err)
			}
			fmt.Printf("Round %d/%d  %d members: served in %.1f s (CPU %.2f s); a member's change in %.2f s (CPU %.2f s, %.0f reconciles); review p99 %.1f ms\n",
				round+1, o.rounds, r.Members, r.Served.Seconds(), r.CreateCPU.Seconds(), r.Change.Seconds(), r.ChangeCPU.Seconds(), r.ChangeReconciles, ms(percentileOf(r.Reviews, 99)))
			results[sizes[i]] = append(results[sizes[i]], r)
		}
	}
	return sharedRows(sizes, results), nil
}

// sharedSizes parses --shared-members.
func sharedSizes(v string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("--shared-members: %q is not a number of members of at least 2", f)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// runChild runs this command again with more flags, in a process of its own, and reads the JSON
// it writes to the file name in --dir into out; flags are given that file's path.
func runChild(ctx context.Context, o options, name string, flags func(path string) []string, out any) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	path, err := filepath.Abs(filepath.Join(o.dir, name))
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, self, append(os.Args[1:], flags(path)...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the benchmark's child process: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// sharedRows summarizes the rounds of each size, with the goals of the largest, and the growth
// of a member's change from the smallest size to the largest against linear growth.
func sharedRows(sizes []int, results map[int][]sharedResult) []stats.Row {
	const name = "shared"
	largest, smallest := slices.Max(sizes), slices.Min(sizes)
	each := func(n int, f func(sharedResult) float64) []float64 { return stats.Each(results[n], f) }
	goal := func(n int, met bool, text string) string {
		if n != largest {
			return ""
		}
		return text + ": " + stats.Verdict(met)
	}
	var rows []stats.Row
	for _, n := range sizes {
		served := each(n, func(r sharedResult) float64 { return r.Served.Seconds() })
		createCPU := each(n, func(r sharedResult) float64 { return r.CreateCPU.Seconds() })
		change := each(n, func(r sharedResult) float64 { return r.Change.Seconds() })
		changeCPU := each(n, func(r sharedResult) float64 { return r.ChangeCPU.Seconds() })
		reconciles := each(n, func(r sharedResult) float64 { return r.ChangeReconciles })
		p50 := each(n, func(r sharedResult) float64 { return ms(percentileOf(r.Reviews, 50)) })
		p99 := each(n, func(r sharedResult) float64 { return ms(percentileOf(r.Reviews, 99)) })
		rows = append(rows,
			stats.Row{Benchmark: name, Measure: fmt.Sprintf("Scheduler with %d members created at once: all served", n), Value: stats.Summarize(served), Unit: "s", Decimals: 2,
				Note: "until its Deployment runs a configuration with every member; operator and webhook in a child process, envtest; rounds: " + stats.Format(2, served)},
			stats.Row{Benchmark: name, Measure: "  operator CPU until its last reconcile", Value: stats.Summarize(createCPU), Unit: "s", Decimals: 2,
				Note: "user+system of the process (operator, webhook, the benchmark's creates), less the benchmark's polling"},
			stats.Row{Benchmark: name, Measure: "  one member's change: in the running configuration", Value: stats.Summarize(change), Unit: "s", Decimals: 2,
				Note: goal(n, slices.Max(change) < 1, "goal < 1 s")},
			stats.Row{Benchmark: name, Measure: "  one member's change: operator CPU", Value: stats.Summarize(changeCPU), Unit: "s", Decimals: 2,
				Note: strings.TrimPrefix(goal(n, stats.Summarize(changeCPU).Median < 0.5, "goal < 0.5 s")+"; ", "; ") + "reconciles per round: " + stats.Format(0, reconciles)},
			stats.Row{Benchmark: name, Measure: "  member review (--dry-run=server update) p50", Value: stats.Summarize(p50), Unit: "ms", Decimals: 1,
				Note: fmt.Sprintf("%d dry-run updates of a member, each a new spec, through the apiserver and the webhook", len(results[n][0].Reviews))},
			stats.Row{Benchmark: name, Measure: "  member review (--dry-run=server update) p99", Value: stats.Summarize(p99), Unit: "ms", Decimals: 1,
				Note: goal(n, stats.Summarize(p99).Median < 50, "goal < 50 ms")},
		)
	}
	if largest != smallest {
		cpu := func(n int) []float64 { return each(n, func(r sharedResult) float64 { return r.ChangeCPU.Seconds() }) }
		ratios := stats.Ratios(cpu(largest), cpu(smallest))
		linear := float64(largest) / float64(smallest)
		rows = append(rows, stats.Row{Benchmark: name, Measure: fmt.Sprintf("  member's change CPU, %d / %d members", largest, smallest), Value: stats.Summarize(ratios), Decimals: 2,
			Note: fmt.Sprintf("goal ≤ %.1f (linear): %s; rounds: %s", linear, stats.Verdict(stats.Summarize(ratios).Median <= linear), stats.Format(2, ratios))})
	}
	return rows
}

// sharedChild is one size of the shared benchmark, in a child process: the operator with its
// webhook on an envtest apiserver; a Scheduler and n members created at once; one member's
// change; dry-run reviews of another member.
func sharedChild(ctx context.Context, o options) error {
	n := o.sharedChild
	c, err := cluster.StartWithWebhooks(o.assets, filepath.Join(o.dir, "shared"), []string{o.webhooks}, o.crds)
	if err != nil {
		return err
	}
	defer c.Stop()
	admin, err := client.New(c.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		return err
	}
	opts := operatorOptions()
	host, port, certDir := c.Webhook()
	opts.Webhook = &controllers.WebhookOptions{Host: host, Port: port, CertDir: certDir}
	// The default limit is below the sizes measured here.
	opts.MaxMembersPerScheduler = max(n, controllers.MaxMembersPerScheduler)
	stop, err := startOperatorWith(ctx, c.Config, opts)
	if err != nil {
		return err
	}
	defer stop()
	if err := waitWebhook(ctx, admin); err != nil {
		return err
	}
	r := sharedResult{Members: n}
	if err := createShared(ctx, admin, o, &r); err != nil {
		return err
	}
	if err := profiled(o.cpuProfile, "change", func() error { return changeMember(ctx, admin, o, &r) }); err != nil {
		return err
	}
	if err := profiled(o.cpuProfile, "review", func() error { return reviewMember(ctx, admin, o, &r) }); err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(o.childOut, data, 0o644)
}

// profiled runs do with a CPU profile written to prefix-what.pprof, when prefix is set.
func profiled(prefix, what string, do func() error) error {
	if prefix == "" {
		return do()
	}
	f, err := os.Create(prefix + "-" + what + ".pprof")
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	return do()
}

// waitWebhook waits until the apiserver calls the webhook: a dry-run create of an invalid
// profile is refused.
func waitWebhook(ctx context.Context, admin client.Client) error {
	invalid := testutil.MakeProfile("webhook-ready").PluginConfig("NodeResourcesFit", `{"scoringStrategy":{"type":"Nope"}}`).Obj()
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := admin.Create(ctx, invalid.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "denied the request"), nil
	})
}

// member is the i-th member of the benchmark's Scheduler: the memory benchmark's kinds of
// profile, all with upstream's queue sort.
func member(i int) *v1alpha1.SchedulerProfile {
	p := benchProfile(i % 20)
	p.Name = fmt.Sprintf("member-%03d", i)
	p.Spec.SchedulerRef.Name = sharedScheduler
	return p
}

// createShared creates the Scheduler and its members at once, waits until its Deployment runs a
// configuration with every member, marks it available and waits until the operator is idle.
func createShared(ctx context.Context, admin client.Client, o options, r *sharedResult) error {
	cpu0, begin := cpuTime(), time.Now()
	if err := admin.Create(ctx, &v1alpha1.Scheduler{ObjectMeta: metav1.ObjectMeta{Name: sharedScheduler}}); err != nil {
		return err
	}
	err := cluster.Parallel(ctx, r.Members, func(ctx context.Context, i int) error { return admin.Create(ctx, member(i)) })
	if err != nil {
		return fmt.Errorf("creating the members: %w", err)
	}
	err = waitRunning(ctx, admin, o, func(cfg runningConfig) bool { return len(cfg.Profiles) == r.Members })
	if err != nil {
		return fmt.Errorf("waiting for a configuration with all %d members: %w", r.Members, err)
	}
	r.Served = time.Since(begin)
	if err := testutil.MarkDeploymentAvailable(ctx, admin, sharedDeployment()); err != nil {
		return err
	}
	r.CreateCPU = waitIdleCPU(ctx) - cpu0
	return nil
}

// changeMember changes one member's spec and waits until the Deployment runs a configuration
// with the change, then marks it available (the rollout finished) and waits until the operator
// is idle.
func changeMember(ctx context.Context, admin client.Client, o options, r *sharedResult) error {
	before := sharedReconciles()
	cpu0, begin := cpuTime(), time.Now()
	p := &v1alpha1.SchedulerProfile{}
	if err := admin.Get(ctx, client.ObjectKey{Name: member(0).Name}, p); err != nil {
		return err
	}
	p.Spec.PercentageOfNodesToScore = ptr.To[int32](changedPercentage)
	if err := admin.Update(ctx, p); err != nil {
		return err
	}
	err := waitRunning(ctx, admin, o, func(cfg runningConfig) bool {
		for _, e := range cfg.Profiles {
			if e.SchedulerName == p.Name {
				return ptr.Deref(e.PercentageOfNodesToScore, 0) == changedPercentage
			}
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("waiting for the member's change in the running configuration: %w", err)
	}
	r.Change = time.Since(begin)
	if err := testutil.MarkDeploymentAvailable(ctx, admin, sharedDeployment()); err != nil {
		return err
	}
	r.ChangeCPU = waitIdleCPU(ctx) - cpu0
	r.ChangeReconciles = sharedReconciles() - before
	return nil
}

// reviewMember times o.reviews dry-run updates of a member, each with a spec not seen before.
func reviewMember(ctx context.Context, admin client.Client, o options, r *sharedResult) error {
	p := &v1alpha1.SchedulerProfile{}
	if err := admin.Get(ctx, client.ObjectKey{Name: member(1).Name}, p); err != nil {
		return err
	}
	for i := range o.reviews {
		q := p.DeepCopy()
		q.Spec.PercentageOfNodesToScore = ptr.To(int32(1 + i%99))
		q.Spec.Plugins = &v1alpha1.Plugins{Score: v1alpha1.PluginSet{Enabled: []v1alpha1.Plugin{{Name: "ImageLocality", Weight: ptr.To(int32(1 + i/99))}}}}
		start := time.Now()
		if err := admin.Update(ctx, q, client.DryRunAll); err != nil {
			return fmt.Errorf("a dry-run update of a member: %w", err)
		}
		r.Reviews = append(r.Reviews, time.Since(start))
	}
	return nil
}

// runningConfig is what the benchmark reads of a rendered configuration.
type runningConfig struct {
	Profiles []struct {
		SchedulerName            string `json:"schedulerName"`
		PercentageOfNodesToScore *int32 `json:"percentageOfNodesToScore,omitempty"`
	} `json:"profiles"`
}

func sharedDeployment() client.ObjectKey {
	return client.ObjectKey{Namespace: operatorNamespace, Name: sharedScheduler + ".scheduler"}
}

// waitRunning polls the Scheduler's Deployment until the configuration its template mounts
// satisfies done.
func waitRunning(ctx context.Context, admin client.Client, o options, done func(runningConfig) bool) error {
	checked := ""
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, o.deadline, true, func(ctx context.Context) (ok bool, err error) {
		benchWork(func() {
			d := &appsv1.Deployment{}
			if err = admin.Get(ctx, sharedDeployment(), d); err != nil {
				err = client.IgnoreNotFound(err)
				return
			}
			hash := d.Spec.Template.Annotations[v1alpha1.AnnotationConfigHash]
			if hash == checked {
				return
			}
			cm := &corev1.ConfigMap{}
			if err = admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: sharedScheduler + ".config-" + hash}, cm); err != nil {
				err = client.IgnoreNotFound(err)
				return
			}
			var cfg runningConfig
			if err = yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &cfg); err != nil {
				return
			}
			checked, ok = hash, done(cfg)
		})
		return ok, err
	})
}

// waitIdleCPU waits until neither controller has reconciled for quiet, and returns this
// process's CPU time at the last reconcile it saw.
func waitIdleCPU(ctx context.Context) time.Duration {
	count := func() (n float64) {
		benchWork(func() { n = sharedReconciles() })
		return n
	}
	last, since, cpu := count(), time.Now(), cpuTime()
	_ = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, false, func(context.Context) (bool, error) {
		if n := count(); n != last {
			last, since, cpu = n, time.Now(), cpuTime()
		}
		return time.Since(since) >= quiet, nil
	})
	return cpu
}

// sharedReconciles counts the reconciles of both controllers from one gathering of the metrics:
// a gathering collects on goroutines of its own, whose CPU time benchWork does not see, so one
// instead of one per controller keeps the benchmark's share of the operator's CPU time small.
func sharedReconciles() float64 {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0
	}
	var total float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && (l.GetValue() == profileController || l.GetValue() == schedulerController) {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// cpuTime is the user and system CPU time of this process so far, less what benchWork spent:
// the operator's, with the client work of the benchmark that runs while it works.
func cpuTime() time.Duration {
	return rusage(syscall.RUSAGE_SELF) - time.Duration(polling.Load())
}

// polling is the CPU time, in nanoseconds, that benchWork measured.
var polling atomic.Int64

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's usage.
const rusageThread = 1

// benchWork runs the benchmark's own work (its polling of the configuration and of the metrics,
// which gathers every metric of the process) on a thread of its own and counts its CPU time in
// polling. The garbage collection of what it allocates is not counted.
func benchWork(do func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := rusage(rusageThread)
	do()
	polling.Add(int64(rusage(rusageThread) - start))
}

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// percentileOf is the p-th percentile of durations.
func percentileOf(d []time.Duration, p float64) time.Duration {
	v := make([]float64, len(d))
	for i := range d {
		v[i] = float64(d[i])
	}
	return time.Duration(stats.Percentile(v, p))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
