// Command localcluster starts and stops the local simulated control plane of internal/localcluster
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on 127.0.0.1) in the
// background, to try things by hand:
//
//	eval "$(go run ./hack/localcluster start --dir .cache/localcluster)"
//	kubectl get nodes
//	go run ./hack/localcluster stop --dir .cache/localcluster
//
// start prints only the export line on stdout, everything else on stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
)

const usage = `usage:
  localcluster start [--dir DIR] [--bin-dir DIR] [--scheduler PATH] [--apiserver-port N] [--nodes N]
  localcluster stop [--dir DIR]`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "start":
		err = start(os.Args[2:])
	case "stop":
		err = stop(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func start(args []string) error {
	fs := flag.NewFlagSet("start", flag.ExitOnError)
	dir := fs.String("dir", ".cache/localcluster", "state directory: certificates, etcd data, kubeconfig, logs")
	binDir := fs.String("bin-dir", "", "directory with etcd, kube-apiserver, kube-controller-manager and kwok (default $"+localcluster.BinDirEnv+" or <repo>/bin/k8s)")
	scheduler := fs.String("scheduler", "", "kube-scheduler binary (default $"+localcluster.SchedulerBinaryEnv+" or <repo>/bin/kube-scheduler)")
	apiserverPort := fs.Int("apiserver-port", 0, "kube-apiserver port on 127.0.0.1 (0: a free one)")
	nodes := fs.Int("nodes", 2, "fake nodes to create (kwok-node-0, kwok-node-1, ...)")
	_ = fs.Parse(args)

	var err error
	if *binDir == "" {
		if *binDir, err = localcluster.DefaultBinDir(); err != nil {
			return err
		}
	}
	if *scheduler == "" {
		if *scheduler, err = localcluster.DefaultSchedulerBinary(); err != nil {
			return err
		}
	}
	// Ctrl-C during start makes Start stop what it has started; once started, the detached processes
	// ignore the terminal.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	began := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Options{
		BinDir:          *binDir,
		SchedulerBinary: *scheduler,
		WorkDir:         *dir,
		Ports:           localcluster.Ports{APIServer: *apiserverPort},
		Detach:          true,
	})
	if err != nil {
		return err
	}
	fakeNodes := make([]*corev1.Node, 0, *nodes)
	for i := range *nodes {
		fakeNodes = append(fakeNodes, localcluster.FakeNode("kwok-node-"+strconv.Itoa(i), nil, nil))
	}
	if err := c.CreateNodes(ctx, fakeNodes); err != nil {
		return errors.Join(err, c.Stop())
	}
	for _, p := range c.Processes() {
		fmt.Fprintf(os.Stderr, "%-24s pid %-8d log %s\n", p.Name, p.PID, p.Log)
	}
	fmt.Fprintf(os.Stderr, "started in %s with %d fake nodes; stop with: go run ./hack/localcluster stop --dir %s\n",
		time.Since(began).Round(100*time.Millisecond), *nodes, *dir)
	fmt.Printf("export KUBECONFIG=%s\n", c.Kubeconfig())
	return nil
}

func stop(args []string) error {
	fs := flag.NewFlagSet("stop", flag.ExitOnError)
	dir := fs.String("dir", ".cache/localcluster", "state directory given to start")
	_ = fs.Parse(args)

	c, err := localcluster.Attach(*dir)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "no cluster recorded in %s: nothing to stop\n", filepath.Clean(*dir))
		return nil
	}
	if err != nil {
		return err
	}
	procs := c.Processes()
	alive := make([]bool, len(procs))
	for i, p := range procs {
		alive[i] = p.Alive()
	}
	if err := c.Stop(); err != nil {
		return err
	}
	for i, p := range procs {
		if alive[i] {
			fmt.Fprintf(os.Stderr, "stopped %s (pid %d)\n", p.Name, p.PID)
		} else {
			fmt.Fprintf(os.Stderr, "%s (pid %d) was not running\n", p.Name, p.PID)
		}
	}
	return nil
}
