// Package autoscaler runs a node autoscaler beside the operator: Karpenter, with its kwok cloud
// provider, as a process next to the local simulated cluster (internal/localcluster), the operator
// in the test process as main wires it (test/framework), and internal/schedrunner running the
// schedulers that the operator's Deployments describe. Karpenter reads only pods' specs to decide
// which NodePool launches a node for them; the tests show what a profile that restricts its nodes
// (the NodePool plugin) does to that decision with and without the operator's projection of the
// restriction onto the pods.
//
// The tier needs bin/k8s/karpenter (built from hack/tools/karpenter by make test-autoscaler) and
// Karpenter's CRDs from its module (KARPENTER_CRDS); make test-autoscaler sets both.
package autoscaler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/schedrunner"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

var (
	// k8s is an admin client of the local cluster.
	k8s client.Client
	// cluster is the local cluster.
	cluster *localcluster.Cluster
	// operator is the operator, running in this process.
	operator *framework.Operator
	// runner runs the profiles' schedulers.
	runner *schedrunner.Runner
	// karpenter is Karpenter's process.
	karpenter *karpenterProcess
	// workDir holds the cluster's, the schedulers' and Karpenter's files and logs; it is
	// removed when every test passed, and kept for a look otherwise.
	workDir string
)

// TestMain runs the suite, or the operator's preview worker when the operator starts this binary
// as one (os.Executable).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == controllers.PreviewWorkerCommand {
		os.Exit(controllers.RunPreviewWorker(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(testutil.RunSuite(m, "autoscaler", setUp, tearDown, func() string { return workDir }))
}

// setUp starts the local cluster, installs and starts the operator and its schedulers' runner,
// installs Karpenter's CRDs and KWOKNodeClass, and starts Karpenter.
func setUp(ctx context.Context) error {
	paths, err := operatorenv.FindPaths()
	if err != nil {
		return err
	}
	crdDirs, binary, err := karpenterPaths(paths.BinDir)
	if err != nil {
		return err
	}
	if cluster, workDir, err = operatorenv.StartCluster(ctx, paths, "spo-autoscaler-"); err != nil {
		return err
	}
	if k8s, err = operatorenv.Client(cluster); err != nil {
		return err
	}
	if err := operatorenv.Install(ctx, k8s, paths.Root); err != nil {
		return err
	}
	// The node of the operator's own scheduler pods. Too small for the tests' pods, so that
	// only a node Karpenter launches can take them, and so that Karpenter knows it.
	system := localcluster.FakeNode("system", nil, corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110"),
	})
	if err := cluster.CreateNodes(ctx, []*corev1.Node{system}); err != nil {
		return err
	}
	cfg, err := cluster.RESTConfig()
	if err != nil {
		return err
	}
	opts := controllers.ManagerOptions{Namespace: operatorenv.Namespace, SchedulerImage: operatorenv.SchedulerImage}
	if operator, err = framework.Start(cfg, opts); err != nil {
		return err
	}
	runner = schedrunner.New(schedrunner.Options{
		Client: k8s, Namespace: operatorenv.Namespace, SchedulerBinary: paths.Scheduler,
		Kubeconfig: cluster.Kubeconfig(), WorkDir: filepath.Join(workDir, "schedulers"),
	})
	go func() { _ = runner.Run(ctx) }()

	if err := installKarpenterCRDs(ctx, crdDirs); err != nil {
		return err
	}
	if err := k8s.Create(ctx, nodeClass()); err != nil {
		return fmt.Errorf("creating the KWOKNodeClass: %w", err)
	}
	start := time.Now()
	if karpenter, err = startKarpenter(ctx, binary, cluster.Kubeconfig(), filepath.Join(workDir, "karpenter.log")); err != nil {
		return err
	}
	fmt.Printf("karpenter ready in %s (log %s)\n", time.Since(start).Round(time.Millisecond), karpenter.proc.Log)
	return nil
}

// tearDown stops Karpenter, the operator and the cluster, whichever were started.
func tearDown() {
	if karpenter != nil {
		if err := karpenter.proc.Stop(10 * time.Second); err != nil {
			fmt.Fprintf(os.Stderr, "stopping karpenter: %v\n", err)
		}
	}
	if operator != nil {
		if err := operator.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the operator: %v\n", err)
		}
	}
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the local cluster: %v\n", err)
		}
	}
}
