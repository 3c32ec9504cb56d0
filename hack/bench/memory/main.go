// Command memory measures what kube-scheduler costs in resident memory when it serves
// SchedulerProfiles in three ways, on one envtest cluster (etcd and kube-apiserver) of fake Ready
// nodes and pods already bound to them:
//
//   - one process with 1 profile (a shared scheduler with one member),
//   - one process with all N profiles (a shared scheduler with N members),
//   - N processes with one profile each (dedicated schedulers).
//
// The configurations come from the operator's own renderer, and every profile proves it works by
// binding a pod before memory is read from /proc/<pid>/status (VmRSS now, VmHWM the peak). The
// three are measured in alternating rounds, because other load on the machine moves the figures;
// the table of medians goes to stdout and to --out. It is what `make bench-memory` runs:
//
//	go run ./hack/bench/memory --assets bin/k8s --scheduler bin/kube-scheduler
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
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// options are the command-line flags.
type options struct {
	assets, scheduler, dir, out string
	nodes, pods, profiles       int
	rounds                      int
	settle, bindTimeout         time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "directory with etcd and kube-apiserver (default $KUBEBUILDER_ASSETS)")
	flag.StringVar(&o.scheduler, "scheduler", "bin/kube-scheduler", "the kube-scheduler binary with the operator's plugins")
	flag.StringVar(&o.dir, "dir", ".cache/bench/memory", "work directory: kubeconfig, scheduler configurations and logs")
	flag.StringVar(&o.out, "out", ".cache/bench/memory.txt", "file the result table is written to")
	flag.IntVar(&o.nodes, "nodes", 1000, "fake nodes")
	flag.IntVar(&o.pods, "pods", 5000, "pods bound to the nodes before the schedulers start")
	flag.IntVar(&o.profiles, "profiles", 20, "profiles of the shared scheduler, and number of dedicated schedulers")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; each measures every configuration once")
	flag.DurationVar(&o.settle, "settle", 10*time.Second, "wait between the last probe pod bound and reading memory")
	flag.DurationVar(&o.bindTimeout, "bind-timeout", 3*time.Minute, "how long the schedulers of a configuration may take to start and bind their probe pods")
	flag.Parse()
	// profile.Validate builds the scheduler framework, which logs every plugin it configures, and
	// envtest logs through controller-runtime; the schedulers' own logs are in --dir.
	klog.SetLogger(logr.Discard())
	ctrllog.SetLogger(logr.Discard())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-memory:", err)
		os.Exit(1)
	}
}

// run validates the configurations, builds the cluster, measures and reports.
func run(ctx context.Context, o options) error {
	begin := time.Now()
	if o.assets == "" {
		return fmt.Errorf("no control-plane binaries: pass --assets or set KUBEBUILDER_ASSETS (bin/k8s after `make k8s-binaries`)")
	}
	if o.profiles < 2 || o.rounds < 1 || o.nodes < 1 {
		return fmt.Errorf("need at least 2 profiles, 1 round and 1 node")
	}
	configs, err := configurations(o.profiles)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	c, err := startCluster(o.assets, o.dir)
	if err != nil {
		return err
	}
	defer c.stop()
	setup := time.Now()
	if err := populate(ctx, c.client, o.nodes, o.pods); err != nil {
		return err
	}
	fmt.Printf("Created %d nodes and %d bound pods in %s\n", o.nodes, o.pods, time.Since(setup).Round(time.Second))

	b := &bench{opts: o, cluster: c}
	results, err := b.rounds(ctx, configs)
	if err != nil {
		return err
	}
	table := report(o, configs, results)
	fmt.Print("\n" + table)
	fmt.Printf("\nTotal run time %s\n", time.Since(begin).Round(time.Second))
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(o.out, []byte(table), 0o644)
}

// rounds measures every configuration once per round, in the same order each round, so that a
// slow phase of the machine spreads over all of them instead of landing on one.
func (b *bench) rounds(ctx context.Context, configs []configuration) (map[string][]sample, error) {
	results := map[string][]sample{}
	for round := 1; round <= b.opts.rounds; round++ {
		for _, c := range configs {
			s, err := b.measure(ctx, c)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", round, c.name, err)
			}
			results[c.name] = append(results[c.name], s)
			fmt.Printf("Round %d/%d  %-24s VmRSS %7.1f MiB  VmHWM %7.1f MiB  (ready in %s)\n",
				round, b.opts.rounds, c.name, mib(s.rss), mib(s.hwm), s.ready.Round(100*time.Millisecond))
		}
	}
	return results, nil
}
