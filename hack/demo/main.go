// Command demo runs the operator on a local simulated cluster and shows profiles placing pods:
//
//	demo start --dir .cache/demo   # cluster, operator, schedulers, samples, workloads, placement tables, a gang
//	demo start --dir .cache/demo --real-node --img IMG --image-tar bin/image.tar \
//	    --pause-image-tar bin/pause.tar --pause-image REF   # the same, the operator in containers
//	demo stop --dir .cache/demo    # stops exactly what start started
//
// It is what `make demo`, `make demo NODE=real` and `make demo-stop` run. The cluster is
// internal/localcluster (etcd, kube-apiserver, kube-controller-manager, kwok); the profiles'
// schedulers run as local processes (internal/schedrunner), since kwok only pretends to run pods.
// With --real-node the cluster also has a real node (kubelet, containerd; it needs root) and the
// operator is installed with `make deploy`, so that it and its schedulers run as containers there,
// as in test/node; the workloads still run on kwok nodes. Demo code, not part of the product.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/schedrunner"
)

const usage = `usage:
  demo start [--dir DIR] [--real-node --img IMG --image-tar TAR --pause-image-tar TAR --pause-image REF]
                           start the cluster, the operator and the samples; print where pods landed
  demo stop [--dir DIR]    stop everything start started`

// stateFile records the demo's own processes (the cluster has its own state file).
const stateFile = "demo.json"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", ".cache/demo", "state directory: cluster, logs, kubeconfig")
	withNode := fs.Bool("real-node", false, "run the operator and its schedulers as containers on a real node (needs root)")
	var node realNode
	fs.StringVar(&node.img, "img", "scheduler-profile-operator:dev", "with --real-node: the operator's image (IMG of make image)")
	fs.StringVar(&node.imageTar, "image-tar", "bin/image.tar", "with --real-node: the image's tarball (make image)")
	fs.StringVar(&node.pauseImageTar, "pause-image-tar", "bin/pause.tar", "with --real-node: the pause image's tarball")
	fs.StringVar(&node.pauseImage, "pause-image", "localcluster.local/pause:3.10", "with --real-node: the pause image's reference")
	_ = fs.Parse(os.Args[2:])
	abs, err := filepath.Abs(*dir)
	if err == nil {
		switch os.Args[1] {
		case "start":
			var rn *realNode
			if *withNode {
				rn = &node
			}
			err = start(abs, rn)
		case "stop":
			err = stop(abs)
		case "runner":
			err = runRunner(abs)
		default:
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// start runs the demo; rn, when set, puts the operator and its schedulers on a real node.
func start(dir string, rn *realNode) (err error) {
	if _, err := os.Stat(filepath.Join(dir, stateFile)); err == nil {
		return fmt.Errorf("a demo is recorded in %s: run `make demo-stop` first", dir)
	}
	paths, err := operatorenv.FindPaths()
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	began := time.Now()
	cluster, err := rn.startCluster(ctx, paths, filepath.Join(dir, "cluster"))
	if err != nil {
		return err
	}
	var procs []*localcluster.Process
	defer func() {
		if err != nil {
			for _, p := range procs {
				_ = p.Stop(10 * time.Second)
			}
			_ = cluster.Stop()
		}
	}()
	c, err := operatorenv.Client(cluster)
	if err != nil {
		return err
	}
	if rn == nil {
		procs, err = startOperator(ctx, c, cluster, paths, dir)
		if err != nil {
			return err
		}
	}
	// With a real node the state lists no process: the operator and the schedulers are the
	// cluster's containers, which the cluster's Stop ends.
	if err := writeState(dir, procs); err != nil {
		return err
	}
	if rn != nil {
		if err := rn.deploy(ctx, c, cluster, paths); err != nil {
			return err
		}
	}

	step("Creating fake nodes: zones a, b, c; pools general and batch; spot and on-demand")
	if err := cluster.CreateNodes(ctx, rn.kwokNodes(demoNodes()...)); err != nil {
		return err
	}
	step("Applying config/samples: three profiles with schedulers of their own, a Scheduler shared by two more")
	samples, err := applySamples(ctx, c, paths.Root)
	if err != nil {
		return err
	}
	if err := waitAvailable(ctx, c, samples); err != nil {
		return fmt.Errorf("%w (%s)", err, rn.logsHint(dir))
	}
	step("Running a workload per profile")
	if err := runWorkloads(ctx, c, samples.workloads, rn); err != nil {
		return fmt.Errorf("%w (%s)", err, rn.logsHint(dir))
	}
	if err := report(ctx, c, samples, os.Stdout); err != nil {
		return err
	}
	step("Assigning a namespace to binpack: its Deployment names no scheduler")
	if err := runAssignment(ctx, c, rn, os.Stdout); err != nil {
		return fmt.Errorf("%w (%s)", err, rn.logsHint(dir))
	}
	if err := runGang(ctx, cluster, c, paths.Root, rn, os.Stdout); err != nil {
		return fmt.Errorf("%w (%s)", err, rn.logsHint(dir))
	}
	fmt.Printf("\nThe demo took %s. The cluster keeps running; to look around:\n\n", time.Since(began).Round(time.Second))
	fmt.Printf("  export KUBECONFIG=%s\n  kubectl get schedulerprofiles\n  kubectl get schedulers\n  kubectl get podgroups\n  kubectl get pods -o wide -l app.kubernetes.io/part-of=schedops-demo\n", cluster.Kubeconfig())
	if rn != nil {
		fmt.Printf("  kubectl get pods -o wide -n %s   # the operator and the schedulers, on the real node\n", operatorenv.Namespace)
	}
	fmt.Printf("\nStop it with `make demo-stop`.\n")
	return nil
}

// startOperator installs the CRDs and starts the operator (bin/manager) and the profiles'
// schedulers (the runner) as local processes that outlive the demo command.
func startOperator(ctx context.Context, c client.Client, cluster *localcluster.Cluster, paths operatorenv.Paths, dir string) ([]*localcluster.Process, error) {
	step("Installing the CRDs (SchedulerProfile, Scheduler) and the webhooks, and starting the operator (bin/manager)")
	if err := operatorenv.Install(ctx, c, paths.Root); err != nil {
		return nil, err
	}
	webhook, err := operatorenv.InstallLocalWebhooks(ctx, c, paths.Root, filepath.Join(dir, "webhook"), nil)
	if err != nil {
		return nil, err
	}
	manager, err := operatorenv.StartManager(cluster, paths.Root, filepath.Join(dir, "manager.log"), webhook, true)
	if err != nil {
		return nil, err
	}
	// Until the operator serves its webhook, the apiserver refuses every profile: "failed calling
	// webhook".
	err = poll(ctx, time.Minute, func() (bool, error) {
		err := c.Create(ctx, &schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, client.DryRunAll)
		return err == nil || !strings.Contains(err.Error(), "failed calling webhook"), nil
	})
	if err != nil {
		_ = manager.Stop(10 * time.Second)
		return nil, fmt.Errorf("the operator's webhook did not answer: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		_ = manager.Stop(10 * time.Second)
		return nil, err
	}
	runner, err := localcluster.StartProcess("schedrunner", self, []string{"runner", "--dir", dir}, nil, filepath.Join(dir, "schedrunner.log"), true)
	if err != nil {
		_ = manager.Stop(10 * time.Second)
		return nil, err
	}
	return []*localcluster.Process{manager, runner}, nil
}

// runRunner is the detached process that runs the profiles' schedulers until it is stopped.
func runRunner(dir string) error {
	cluster, err := localcluster.Attach(filepath.Join(dir, "cluster"))
	if err != nil {
		return err
	}
	c, err := operatorenv.Client(cluster)
	if err != nil {
		return err
	}
	scheduler, err := localcluster.DefaultSchedulerBinary()
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	return schedrunner.New(schedrunner.Options{
		Client: c, Namespace: operatorenv.Namespace, SchedulerBinary: scheduler,
		Kubeconfig: cluster.Kubeconfig(), WorkDir: filepath.Join(dir, "schedulers"),
	}).Run(ctx)
}

func stop(dir string) error {
	var errs []error
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(os.Stderr, "no demo processes recorded in %s\n", dir)
	case err != nil:
		return err
	default:
		var procs []*localcluster.Process
		if err := json.Unmarshal(data, &procs); err != nil {
			return fmt.Errorf("reading %s: %w", stateFile, err)
		}
		for _, p := range procs {
			if err := p.Stop(15 * time.Second); err != nil {
				errs = append(errs, err)
				continue
			}
			fmt.Fprintf(os.Stderr, "stopped %s (pid %d)\n", p.Name, p.PID)
		}
	}
	if cluster, err := localcluster.Attach(filepath.Join(dir, "cluster")); err == nil {
		for _, p := range cluster.Processes() {
			fmt.Fprintf(os.Stderr, "stopping %s (pid %d)\n", p.Name, p.PID)
		}
		errs = append(errs, cluster.Stop())
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// writeState records the demo's own processes; none is an empty list, not null.
func writeState(dir string, procs []*localcluster.Process) error {
	if procs == nil {
		procs = []*localcluster.Process{}
	}
	data, err := json.MarshalIndent(procs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, stateFile), data, 0o600)
}

func step(msg string) { fmt.Fprintf(os.Stderr, "==> %s\n", msg) }
