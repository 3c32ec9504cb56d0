// Command demo runs the operator on a local simulated cluster and shows profiles placing pods:
//
//	demo start --dir .cache/demo   # cluster, operator, schedulers, samples, workloads, placement tables, a gang
//	demo stop --dir .cache/demo    # stops exactly what start started
//
// It is what `make demo` and `make demo-stop` run. The cluster is internal/localcluster (etcd,
// kube-apiserver, kube-controller-manager, kwok); the profiles' schedulers run as local processes
// (internal/schedrunner), since kwok only pretends to run pods. Demo code, not part of the product.
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
	"syscall"
	"time"

	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/schedrunner"
)

const usage = `usage:
  demo start [--dir DIR]   start the cluster, the operator and the samples; print where pods landed
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
	_ = fs.Parse(os.Args[2:])
	abs, err := filepath.Abs(*dir)
	if err == nil {
		switch os.Args[1] {
		case "start":
			err = start(abs)
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

func start(dir string) (err error) {
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
	step("Starting the local cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)")
	cluster, err := localcluster.Start(ctx, localcluster.Options{BinDir: paths.BinDir, SchedulerBinary: paths.Scheduler, WorkDir: filepath.Join(dir, "cluster"), Detach: true})
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
	step("Installing the CRDs (SchedulerProfile, Scheduler) and starting the operator (bin/manager)")
	if err := operatorenv.Install(ctx, c, paths.Root); err != nil {
		return err
	}
	manager, err := operatorenv.StartManager(cluster, paths.Root, filepath.Join(dir, "manager.log"), true)
	if err != nil {
		return err
	}
	procs = append(procs, manager)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	runner, err := localcluster.StartProcess("schedrunner", self, []string{"runner", "--dir", dir}, nil, filepath.Join(dir, "schedrunner.log"), true)
	if err != nil {
		return err
	}
	procs = append(procs, runner)
	if err := writeState(dir, procs); err != nil {
		return err
	}

	step("Creating fake nodes: zones a, b, c; pools general and batch; spot and on-demand")
	if err := cluster.CreateNodes(ctx, demoNodes()); err != nil {
		return err
	}
	step("Applying config/samples: three profiles with schedulers of their own, a Scheduler shared by two more")
	samples, err := applySamples(ctx, c, paths.Root)
	if err != nil {
		return err
	}
	if err := waitAvailable(ctx, c, samples); err != nil {
		return fmt.Errorf("%w (operator log: %s)", err, filepath.Join(dir, "manager.log"))
	}
	step("Running a workload per profile")
	if err := runWorkloads(ctx, c, samples.workloads); err != nil {
		return fmt.Errorf("%w (scheduler logs: %s)", err, filepath.Join(dir, "schedulers"))
	}
	if err := report(ctx, c, samples, os.Stdout); err != nil {
		return err
	}
	if err := runGang(ctx, cluster, c, paths.Root, os.Stdout); err != nil {
		return fmt.Errorf("%w (scheduler logs: %s)", err, filepath.Join(dir, "schedulers"))
	}
	fmt.Printf("\nThe demo took %s. The cluster keeps running; to look around:\n\n", time.Since(began).Round(time.Second))
	fmt.Printf("  export KUBECONFIG=%s\n  kubectl get schedulerprofiles\n  kubectl get schedulers\n  kubectl get podgroups\n  kubectl get pods -o wide -l app.kubernetes.io/part-of=schedops-demo\n\nStop it with `make demo-stop`.\n", cluster.Kubeconfig())
	return nil
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

func writeState(dir string, procs []*localcluster.Process) error {
	data, err := json.MarshalIndent(procs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, stateFile), data, 0o600)
}

func step(msg string) { fmt.Fprintf(os.Stderr, "==> %s\n", msg) }
