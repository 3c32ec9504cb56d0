// Command bench runs the project's benchmarks and prints their figures as one table, which it
// also writes to --out. It is what `make bench` runs; `make bench-<name>` runs one of them:
//
//   - validate: the latency of profile.Validate over the golden profiles (in this process);
//   - throughput: pods bound per second by upstream kube-scheduler, by bin/kube-scheduler with the
//     default profile and with NodePool and NodeLabelPreference, by upstream with NodeAffinity
//     doing what those two do, by bin/kube-scheduler with two plugins that do nothing at the
//     extension points of ours (the framework's floor), and by a client that only posts Bindings
//     (the apiserver's ceiling), on an envtest apiserver with fake nodes;
//   - simulate-cli: `manager simulate` as a user runs it, the binary in a child process, on a
//     snapshot file of thousands of nodes and tens of thousands of pending pods;
//   - cycle: the CPU time of the plugins' part of a scheduling cycle with the default profile,
//     with NodePool and NodeLabelPreference, and with two plugins that do nothing (in this
//     process, on the same nodes, without an apiserver);
//   - operator: the operator reconciling hundreds of profiles created at once (in a child process
//     of this command, so that its peak memory is the operator's);
//   - preview: the operator's preview of a profile's change (in a process of its own, so that its
//     resident memory is the operator's), on an envtest apiserver with the profile's pods;
//   - preview-large: the same preview on 5,000 nodes and 50,000 pods that carry annotations and
//     environment variables, with the default budgets: the operator's peak resident memory, its
//     preview's child processes', and whether the preview completed (one round);
//   - shared: the operator and its webhook with one Scheduler of 50 and of 150 members created at
//     once (in a child process per size and round): until all are served, one member's change,
//     dry-run reviews of a member;
//   - assign: pod assignment by the operator's MutatingAdmissionPolicy (in a child process per
//     round, the operator in a process of its own): the latency of pod creates at a steady pace
//     and the rate of pod creates, in a labelled namespace against an unlabelled one, with the
//     operator running and once it has stopped;
//   - memory: the resident memory of kube-scheduler serving 1 profile, N profiles in one process
//     and N profiles in N processes.
//
// The machine these run on is shared and noisy, so every figure that can be is measured in
// alternating rounds and shown as the median with its spread, and schedulers are compared round
// by round with their reference. Usage:
//
//	go run ./hack/bench --assets bin/k8s --scheduler bin/kube-scheduler --upstream-scheduler bin/kube-scheduler-upstream
//
// Benchmark code, not part of the product.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/stats"
)

// options are the command-line flags.
type options struct {
	run                           string
	assets, scheduler, upstream   string
	noopScheduler                 string
	crds, golden, dir, out        string
	rounds, nodes, pods           int
	schedulerQPS, ceilingWorkers  int
	operatorProfiles              int
	schedulerArgs                 string
	memoryProfiles, memoryPods    int
	validateCalls, cyclePods      int
	settle, bindTimeout, deadline time.Duration
	// operatorChild is where the operator benchmark, run as a child process, writes its result.
	operatorChild string
	// sharedMembers are the sizes of the shared benchmark's Scheduler; sharedChild, in a child
	// process, is the one it measures, and childOut where it writes its result.
	sharedMembers string
	sharedChild   int
	childOut      string
	webhooks      string
	reviews       int
	// assignChild, in a child process, runs one round of the assign benchmark; the others size it.
	assignChild                                          bool
	assignPods, assignClients, assignBatch, assignBlocks int
	assignRate                                           float64
	cpuProfile                                           string
	// operatorCPUProfile is where operator writes a CPU profile of the settling of its profiles.
	operatorCPUProfile string
	// operatorProcess, in an operator's process of assign or preview, names the file that says
	// what it serves.
	operatorProcess string
	// previewNodes and previewPods size the cluster of preview; previewCPUProfile is where it
	// writes a CPU profile of its operator's process.
	previewNodes, previewPods int
	previewCPUProfile         string
	// previewOtherPods are pods of other schedulers on the preview's cluster, bound to its nodes.
	previewOtherPods int
	// manager is the binary simulate-cli runs; the others size its snapshot and its runs.
	manager                                              string
	simulateCLINodes, simulateCLIPods, simulateCLIRounds int
}

// benchmark is one of the benchmarks: it returns the rows it adds to the table.
type benchmark struct {
	name string
	run  func(context.Context, options) ([]stats.Row, error)
}

var benchmarks = []benchmark{
	{"validate", benchValidate},
	{"throughput", benchThroughput},
	{"simulate", benchSimulate},
	{"simulate-cli", benchSimulateCLI},
	{"cycle", benchCycle},
	{"operator", benchOperator},
	{"preview", benchPreview},
	{"preview-large", benchPreviewLarge},
	{"shared", benchShared},
	{"assign", benchAssign},
	{"memory", benchMemory},
}

func main() {
	// The operator's previews, in an operator process of this binary, start it as their worker.
	if len(os.Args) > 1 && os.Args[1] == controllers.PreviewWorkerCommand {
		os.Exit(controllers.RunPreviewWorker(os.Stdin, os.Stdout, os.Stderr))
	}
	var o options
	flag.StringVar(&o.run, "run", "validate,throughput,simulate,simulate-cli,cycle,operator,preview,preview-large,shared,assign,memory", "the benchmarks to run, comma-separated")
	flag.StringVar(&o.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "directory with etcd and kube-apiserver (default $KUBEBUILDER_ASSETS)")
	flag.StringVar(&o.scheduler, "scheduler", "bin/kube-scheduler", "the kube-scheduler binary with the operator's plugins")
	flag.StringVar(&o.upstream, "upstream-scheduler", "bin/kube-scheduler-upstream", "upstream kube-scheduler, built from the same k8s.io/kubernetes module")
	flag.StringVar(&o.noopScheduler, "noop-scheduler", "bin/kube-scheduler-noop", "bin/kube-scheduler with two plugins that do nothing (hack/bench/noop-scheduler)")
	flag.StringVar(&o.crds, "crds", "config/crd/bases", "the operator's CRDs")
	flag.StringVar(&o.golden, "golden", "scheduler/profile/testdata", "directory of the golden profiles (*.golden) that validate measures")
	flag.StringVar(&o.dir, "dir", ".cache/bench", "work directory: kubeconfigs, scheduler configurations and logs")
	flag.StringVar(&o.out, "out", ".cache/bench/bench.txt", "file the table is written to")
	flag.IntVar(&o.rounds, "rounds", 4, "rounds of every benchmark; each round measures every configuration once")
	flag.IntVar(&o.nodes, "nodes", 1000, "fake nodes of throughput and memory")
	flag.IntVar(&o.pods, "pods", 5000, "pods that throughput schedules per scheduler and round")
	flag.IntVar(&o.schedulerQPS, "scheduler-qps", 5000, "client qps and burst of the schedulers in throughput, so that the client-side rate limit does not set the pace")
	flag.IntVar(&o.ceilingWorkers, "ceiling-workers", 16, "Bindings in flight at once in the apiserver-ceiling client (kube-scheduler's default parallelism)")
	flag.StringVar(&o.schedulerArgs, "scheduler-args", "", "more flags for the schedulers of throughput, space-separated (to profile them: --authorization-always-allow-paths=/debug/pprof/*)")
	flag.IntVar(&o.operatorProfiles, "operator-profiles", 1000, "SchedulerProfiles that operator creates at once")
	flag.IntVar(&o.memoryProfiles, "memory-profiles", 20, "profiles of the shared scheduler, and number of dedicated schedulers, in memory")
	flag.IntVar(&o.memoryPods, "memory-pods", 5000, "pods bound to the nodes before the schedulers of memory start")
	flag.IntVar(&o.validateCalls, "validate-calls", 100, "calls of Validate per golden profile and round")
	flag.IntVar(&o.cyclePods, "cycle-pods", 1000, "pods that cycle schedules per profile and round")
	flag.DurationVar(&o.settle, "settle", 10*time.Second, "memory: wait between the last probe pod bound and reading memory")
	flag.DurationVar(&o.bindTimeout, "bind-timeout", 5*time.Minute, "how long a scheduler may take to start and bind its pods")
	flag.DurationVar(&o.deadline, "operator-timeout", 10*time.Minute, "how long the operator may take to settle the profiles")
	flag.StringVar(&o.operatorChild, "operator-child", "", "internal: run the operator benchmark in this process and write its result to this file")
	flag.StringVar(&o.sharedMembers, "shared-members", "50,150", "members of the Scheduler that shared creates at once, one size per child process and round, comma-separated")
	flag.IntVar(&o.reviews, "shared-reviews", 200, "dry-run updates of a member that shared times per size and round")
	flag.StringVar(&o.webhooks, "webhooks", "config/webhook/manifests.yaml", "the operator's webhook configurations, which shared installs")
	flag.IntVar(&o.sharedChild, "shared-child-members", 0, "internal: run the shared benchmark for this many members in this process")
	flag.StringVar(&o.cpuProfile, "shared-cpuprofile", "", "shared: write CPU profiles of a member's change and of the reviews to <this>-change.pprof and <this>-review.pprof")
	flag.StringVar(&o.operatorCPUProfile, "operator-cpuprofile", "", "operator: write a CPU profile of the settling of the profiles to <this>-settle.pprof")
	flag.BoolVar(&o.assignChild, "assign-child", false, "internal: run one round of the assign benchmark in this process")
	flag.StringVar(&o.operatorProcess, "operator-process", "", "internal: run the operator of assign or preview in this process, as the JSON file this names says")
	flag.IntVar(&o.previewNodes, "preview-nodes", 1000, "preview: fake nodes of the cluster the operator previews a change on")
	flag.IntVar(&o.previewPods, "preview-pods", 2000, "preview: pods of the profile's scheduler name, three in four bound to the nodes, the others pending")
	flag.IntVar(&o.previewOtherPods, "preview-other-pods", 0, "preview: pods of default-scheduler bound to the nodes, each with a 1 KiB annotation and 10 environment variables: the rest of a large cluster, which a preview reads and does not simulate")
	flag.StringVar(&o.previewCPUProfile, "preview-cpuprofile", "", "preview: write a CPU profile of the operator's process, over all its rounds, to <this>-operator.pprof")
	flag.StringVar(&o.manager, "manager", "bin/manager", "simulate-cli: the operator's binary, whose simulate command it runs")
	flag.IntVar(&o.simulateCLINodes, "simulate-cli-nodes", 5000, "simulate-cli: nodes of the snapshot")
	flag.IntVar(&o.simulateCLIPods, "simulate-cli-pods", 50000, "simulate-cli: pending pods of the snapshot, which the profile schedules")
	flag.IntVar(&o.simulateCLIRounds, "simulate-cli-rounds", 0, "simulate-cli: runs of manager simulate; 0 is --rounds")
	flag.IntVar(&o.assignPods, "assign-pods", 2000, "assign: pods created at --assign-rate in each namespace and phase, whose creates are timed")
	flag.Float64Var(&o.assignRate, "assign-rate", 200, "assign: pod creates per second while the creates are timed, every other one in the labelled namespace")
	flag.IntVar(&o.assignClients, "assign-clients", 16, "assign: clients creating pods at once when the rate of creates is measured")
	flag.IntVar(&o.assignBatch, "assign-batch", 500, "assign: pods per block when the rate of creates is measured")
	flag.IntVar(&o.assignBlocks, "assign-blocks", 6, "assign: blocks per namespace, phase and round; the namespaces take turns in the order of a balanced Latin square")
	flag.StringVar(&o.childOut, "child-out", "", "internal: where a child process writes its result")
	flag.Parse()
	// profile.Validate builds the scheduler framework, which logs every plugin it configures, and
	// envtest logs through controller-runtime; the schedulers' own logs are in --dir.
	klog.SetLogger(logr.Discard())
	ctrllog.SetLogger(logr.Discard())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case o.operatorChild != "":
		err = operatorChild(ctx, o)
	case o.sharedChild > 0:
		err = sharedChild(ctx, o)
	case o.operatorProcess != "":
		err = runOperatorProcess(ctx, o)
	case o.assignChild:
		err = assignChild(ctx, o)
	default:
		err = run(ctx, o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run runs the selected benchmarks in the order of benchmarks and prints the table.
func run(ctx context.Context, o options) error {
	begin := time.Now()
	selected := strings.Split(o.run, ",")
	for _, name := range selected {
		if !slices.ContainsFunc(benchmarks, func(b benchmark) bool { return b.name == name }) {
			return fmt.Errorf("unknown benchmark %q in --run", name)
		}
	}
	if o.rounds < 1 || o.nodes < 1 || o.pods < 1 {
		return fmt.Errorf("need at least 1 round, 1 node and 1 pod")
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	var table stats.Table
	var took []string
	for _, b := range benchmarks {
		if !slices.Contains(selected, b.name) {
			continue
		}
		fmt.Printf("== %s\n", b.name)
		start := time.Now()
		rows, err := b.run(ctx, o)
		if err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		table.Add(rows...)
		d := time.Since(start).Round(time.Second)
		took = append(took, fmt.Sprintf("%s %s", b.name, d))
		fmt.Printf("== %s took %s\n", b.name, d)
	}
	out := header(o, begin) + "\n" + table.String() + fmt.Sprintf("\nRun time %s (%s)\n", time.Since(begin).Round(time.Second), strings.Join(took, ", "))
	fmt.Print("\n" + out)
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(o.out, []byte(out), 0o644)
}

// header says when and where the table was measured, and with which settings.
func header(o options, begin time.Time) string {
	mem := "?"
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf("%.0f GiB", cluster.MiB(kb<<10)/1024)
		}
	}
	return fmt.Sprintf("bench %s: %s UTC, %d CPUs, %s RAM, %s; rounds %d, nodes %d, pods %d\n",
		o.run, begin.UTC().Format("2006-01-02 15:04"), runtime.NumCPU(), mem, runtime.Version(), o.rounds, o.nodes, o.pods)
}

// order is the order in which round measures n configurations: the rows of a balanced Latin
// square, so that over n rounds every configuration runs once in every position, and (for even n)
// follows every other configuration once. A slow phase of the machine, or a configuration that
// slows the next one down, then spreads over all of them.
func order(n, round int) []int {
	idx := make([]int, n)
	for i := range n {
		// The first row is 0, 1, n-1, 2, n-2, ...; each row adds one to the one before.
		first := (i + 1) / 2
		if i > 0 && i%2 == 0 {
			first = n - i/2
		}
		idx[i] = (first + round) % n
	}
	// For odd n the mirrored rows follow, which balance who follows whom.
	if (round/n)%2 == 1 {
		slices.Reverse(idx)
	}
	return idx
}
