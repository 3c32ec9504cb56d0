// Package e2e runs the operator end to end on a local simulated cluster (internal/localcluster): real
// etcd, kube-apiserver and kube-controller-manager (Deployments, ReplicaSets, garbage collection),
// kwok for the nodes, the operator in the test process as main wires it (test/framework), and
// internal/schedrunner running the schedulers that the operator's Deployments describe, so that
// profiles really place pods.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/schedrunner"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

const operatorNamespace = operatorenv.Namespace

// unschedulableTimeout is the operator's --rollout-unschedulable-timeout here: the tests that
// make a scheduler pod no node can take wait for it three times, and the default (a minute,
// DefaultUnschedulableTimeout, whose use the unit tests check) would make that three minutes.
const unschedulableTimeout = 30 * time.Second

var (
	// k8s is an admin client of the local cluster.
	k8s client.Client
	// cluster is the local cluster.
	cluster *localcluster.Cluster
	// runner runs the profiles' schedulers.
	runner *schedrunner.Runner
	// operator is the operator, running in this process.
	operator *framework.Operator
	// operatorOptions and operatorConfig are what the operator was started with.
	operatorOptions controllers.ManagerOptions
	operatorConfig  *rest.Config
)

func TestMain(m *testing.M) {
	// The operator's previews start this binary as their worker (os.Executable).
	if len(os.Args) > 1 && os.Args[1] == controllers.PreviewWorkerCommand {
		os.Exit(controllers.RunPreviewWorker(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := setUp(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "e2e set-up failed: %v\n", err)
		if cluster != nil {
			_ = cluster.Stop()
		}
		return 1
	}
	defer func() {
		cancel()
		if err := operator.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the operator: %v\n", err)
		}
		if err := cluster.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the local cluster: %v\n", err)
		}
	}()
	return m.Run()
}

func setUp(ctx context.Context) error {
	paths, err := operatorenv.FindPaths()
	if err != nil {
		return err
	}
	var workDir string
	if cluster, workDir, err = operatorenv.StartCluster(ctx, paths, "spo-e2e-"); err != nil {
		return err
	}
	if k8s, err = operatorenv.Client(cluster); err != nil {
		return err
	}
	if err := operatorenv.Install(ctx, k8s, paths.Root); err != nil {
		return err
	}
	// A node for the operator's own scheduler pods; the tests' nodes are tainted for their pods only.
	if err := cluster.CreateNodes(ctx, []*corev1.Node{localcluster.FakeNode("system", nil, nil)}); err != nil {
		return err
	}
	cfg, err := cluster.RESTConfig()
	if err != nil {
		return err
	}
	webhook, err := setUpWebhook(ctx, paths.Root, filepath.Join(workDir, "webhook"))
	if err != nil {
		return err
	}
	// A stranded pod is deleted after a short grace, for TestAssignmentThroughPolicy; a rollout
	// whose new pod stays Unschedulable is rolled back after unschedulableTimeout.
	operatorOptions = controllers.ManagerOptions{Namespace: operatorNamespace, SchedulerImage: operatorenv.SchedulerImage, Webhook: webhook,
		StrandedPodGrace: 10 * time.Second, StrandedInterval: 2 * time.Second,
		Rollout: controllers.RolloutThresholds{Unschedulable: unschedulableTimeout}}
	operatorConfig = cfg
	if operator, err = framework.Start(cfg, operatorOptions); err != nil {
		return err
	}
	runner = schedrunner.New(schedrunner.Options{
		Client: k8s, Namespace: operatorNamespace, SchedulerBinary: paths.Scheduler,
		Kubeconfig: cluster.Kubeconfig(), WorkDir: filepath.Join(workDir, "schedulers"),
	})
	go func() { _ = runner.Run(ctx) }()
	return nil
}
