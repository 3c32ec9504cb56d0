// Package operatorenv installs and starts the operator on a local simulated cluster
// (internal/localcluster): its CRD, its namespace and bin/manager as a process. The end-to-end tests
// and `make demo` share it. Test and demo code, not part of the product.
package operatorenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
)

const (
	// Namespace is the operator's namespace, as `make deploy` uses it.
	Namespace = "scheduler-profile-operator-system"
	// SchedulerImage is what the scheduler Deployments name; kwok never pulls it.
	SchedulerImage = "example.com/scheduler-profile-operator:local"
)

// NewScheme knows the client-go types, CRDs and SchedulerProfiles.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(schedulingv1alpha1.AddToScheme(s))
	return s
}

// Install creates the SchedulerProfile CRD from the repository (waiting until it is established)
// and the operator's namespace.
func Install(ctx context.Context, c client.Client, root string) error {
	path := filepath.Join(root, "config", "crd", "bases", "scheduling.schedops.io_schedulerprofiles.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		return fmt.Errorf("parsing %s: %w", path, err)
	}
	if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the CRD: %w", err)
	}
	if err := waitEstablished(ctx, c, crd); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	return nil
}

func waitEstablished(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err == nil {
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("the SchedulerProfile CRD was not established within 30s")
}

// StartManager runs bin/manager against the cluster, logging to logPath. With detach it outlives
// the caller.
func StartManager(cluster *localcluster.Cluster, root, logPath string, detach bool) (*localcluster.Process, error) {
	manager := filepath.Join(root, "bin", "manager")
	if _, err := os.Stat(manager); err != nil {
		return nil, fmt.Errorf("the operator binary is missing, run `make build`: %w", err)
	}
	return localcluster.StartProcess("manager", manager,
		[]string{"--metrics-bind-address=0", "--health-probe-bind-address=0"},
		[]string{"KUBECONFIG=" + cluster.Kubeconfig(), "OPERATOR_NAMESPACE=" + Namespace, "RELATED_IMAGE_SCHEDULER=" + SchedulerImage},
		logPath, detach)
}

// Paths are where the repository and the binaries a local cluster needs are.
type Paths struct {
	// Root holds go.mod, config/ and bin/.
	Root string
	// BinDir holds etcd, kube-apiserver, kube-controller-manager and kwok.
	BinDir string
	// Scheduler is bin/kube-scheduler.
	Scheduler string
}

// FindPaths locates the repository and the binaries (LOCALCLUSTER_* variables or bin/).
func FindPaths() (Paths, error) {
	var p Paths
	var err error
	if p.Root, err = localcluster.RepoRoot(); err != nil {
		return p, err
	}
	if p.BinDir, err = localcluster.DefaultBinDir(); err != nil {
		return p, err
	}
	p.Scheduler, err = localcluster.DefaultSchedulerBinary()
	return p, err
}

// Client is an admin client of the cluster that knows SchedulerProfiles.
func Client(cluster *localcluster.Cluster) (client.Client, error) {
	cfg, err := cluster.RESTConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: NewScheme()})
}
