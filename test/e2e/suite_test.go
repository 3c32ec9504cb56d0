// Package e2e runs the operator end to end on a local simulated cluster (test/localcluster): real
// etcd, kube-apiserver and kube-controller-manager (Deployments, ReplicaSets, garbage collection),
// kwok for the nodes, bin/manager as a process, and test/schedrunner running the schedulers that
// the operator's Deployments describe, so that profiles really place pods.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/test/localcluster"
	"github.com/schedops/scheduler-profile-operator/test/schedrunner"
)

const (
	operatorNamespace = "scheduler-profile-operator-system"
	schedulerImage    = "example.com/scheduler-profile-operator:e2e"
)

var (
	// k8s is an admin client of the local cluster.
	k8s client.Client
	// cluster is the local cluster.
	cluster *localcluster.Cluster
	// runner runs the profiles' schedulers.
	runner *schedrunner.Runner
	// managerLog is the operator's log file.
	managerLog string
)

func TestMain(m *testing.M) {
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
		if err := cluster.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the local cluster: %v\n", err)
		}
	}()
	return m.Run()
}

func setUp(ctx context.Context) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	binDir, err := localcluster.DefaultBinDir()
	if err != nil {
		return err
	}
	scheduler, err := localcluster.DefaultSchedulerBinary()
	if err != nil {
		return err
	}
	manager := filepath.Join(root, "bin", "manager")
	if _, err := os.Stat(manager); err != nil {
		return fmt.Errorf("the operator binary is missing, run `make build`: %w", err)
	}
	workDir, err := os.MkdirTemp("", "spo-e2e-")
	if err != nil {
		return err
	}
	start := time.Now()
	cluster, err = localcluster.Start(ctx, localcluster.Options{BinDir: binDir, SchedulerBinary: scheduler, WorkDir: filepath.Join(workDir, "cluster")})
	if err != nil {
		return err
	}
	fmt.Printf("local cluster started in %s (%s)\n", time.Since(start).Round(time.Millisecond), workDir)
	cfg, err := cluster.RESTConfig()
	if err != nil {
		return err
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: newScheme()}); err != nil {
		return err
	}
	if err := installCRD(ctx, filepath.Join(root, "config", "crd", "bases", "scheduling.schedops.io_schedulerprofiles.yaml")); err != nil {
		return err
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// A node for the operator's own scheduler pods; the tests' nodes are tainted for their pods only.
	if err := cluster.CreateNodes(ctx, []*corev1.Node{localcluster.FakeNode("system", nil, nil)}); err != nil {
		return err
	}
	managerLog = filepath.Join(workDir, "manager.log")
	if _, err := localcluster.StartProcess("manager", manager,
		[]string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--zap-log-level=debug"},
		[]string{"KUBECONFIG=" + cluster.Kubeconfig(), "OPERATOR_NAMESPACE=" + operatorNamespace, "RELATED_IMAGE_SCHEDULER=" + schedulerImage},
		managerLog, false); err != nil {
		return err
	}
	runner = schedrunner.New(schedrunner.Options{
		Client: k8s, Namespace: operatorNamespace, SchedulerBinary: scheduler,
		Kubeconfig: cluster.Kubeconfig(), WorkDir: filepath.Join(workDir, "schedulers"),
	})
	go func() { _ = runner.Run(ctx) }()
	return nil
}

func installCRD(ctx context.Context, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		return fmt.Errorf("parsing %s: %w", path, err)
	}
	if err := k8s.Create(ctx, crd); err != nil {
		return fmt.Errorf("creating the CRD: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(crd), crd); err == nil {
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("the CRD was not established within 30s")
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(schedulingv1alpha1.AddToScheme(s))
	return s
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
