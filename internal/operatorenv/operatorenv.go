// Package operatorenv installs and starts the operator on a local simulated cluster
// (internal/localcluster): its CRDs, its namespace, and, for `make demo`, bin/manager as a process
// that outlives the demo command. The end-to-end tests install with it and run the operator in
// their own process (test/framework). On a cluster with a real node, Deploy installs it with `make
// deploy` instead, as a container (test/node and `make demo NODE=real`). Test and demo code, not
// part of the product.
package operatorenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/scheme"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

const (
	// Namespace is the operator's namespace, as `make deploy` uses it.
	Namespace = "scheduler-profile-operator-system"
	// SchedulerImage is what the scheduler Deployments name; kwok never pulls it.
	SchedulerImage = "example.com/scheduler-profile-operator:local"
)

// NewScheme knows what the operator knows (client-go's types and SchedulerProfiles) and CRDs,
// which an administrator installs.
func NewScheme() *runtime.Scheme {
	s := scheme.New()
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}

// Install creates the operator's CRDs from the repository (config/crd/bases: SchedulerProfile
// and Scheduler; the manager watches both and does not start without either), waits until they
// are established, and creates the operator's namespace.
func Install(ctx context.Context, c client.Client, root string) error {
	paths, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		return err
	}
	if err := InstallCRDs(ctx, c, paths...); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	return nil
}

// InstallCRDs creates the CRDs of the YAML files (one each; those that exist are kept) and
// waits until they are established.
func InstallCRDs(ctx context.Context, c client.Client, paths ...string) error {
	var names []string
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return fmt.Errorf("parsing %s: %w", path, err)
		}
		if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the CRD %s: %w", crd.Name, err)
		}
		names = append(names, crd.Name)
	}
	return WaitEstablished(ctx, c, names...)
}

// establishTimeout bounds the wait for new CRDs to be served; the apiserver takes a second or two.
const establishTimeout = 30 * time.Second

// WaitEstablished waits until the CRDs of the names are established, so that their kinds are served.
func WaitEstablished(ctx context.Context, c client.Client, names ...string) error {
	err := testutil.Poll(ctx, establishTimeout, func(ctx context.Context) error {
		for _, name := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return err
			}
			if !slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
				return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
			}) {
				return fmt.Errorf("CRD %s is not established", name)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRDs %v: %w", names, err)
	}
	return nil
}

// StartManager runs bin/manager against the cluster, logging to logPath. With detach it outlives
// the caller, as `make demo` wants: the tests run the operator in their own process instead
// (test/framework). It serves the webhooks that InstallLocalWebhooks installed; with a nil
// webhook it runs without them, like `make run`.
func StartManager(cluster *localcluster.Cluster, root, logPath string, webhook *LocalWebhook, detach bool) (*localcluster.Process, error) {
	manager := filepath.Join(root, "bin", "manager")
	if _, err := os.Stat(manager); err != nil {
		return nil, fmt.Errorf("the operator binary is missing, run `make build`: %w", err)
	}
	args := []string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--enable-webhook=false"}
	if webhook != nil {
		args = append(args[:2], webhook.managerArgs()...)
	}
	return localcluster.StartProcess("manager", manager, args,
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

// StartCluster starts the local simulated cluster, with the binaries and the scheduler of paths,
// in its own temporary work directory named from prefix, which it returns with the cluster (a
// failed start returns it too, for its logs), and says on stdout how long the start took.
func StartCluster(ctx context.Context, paths Paths, prefix string) (*localcluster.Cluster, string, error) {
	workDir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, "", err
	}
	start := time.Now()
	cluster, err := localcluster.Start(ctx, localcluster.Options{BinDir: paths.BinDir, SchedulerBinary: paths.Scheduler, WorkDir: filepath.Join(workDir, "cluster")})
	if err != nil {
		return nil, workDir, err
	}
	fmt.Printf("local cluster started in %s (%s)\n", time.Since(start).Round(time.Millisecond), workDir)
	return cluster, workDir, nil
}
