// Package olm installs the operator with the real OLM (v0): its olm and catalog operators and
// opm, built from hack/tools/olm, run as processes beside the local simulated cluster
// (internal/localcluster); opm serves the file-based catalog of make catalog (hack/catalog) to a
// CatalogSource by spec.address, so no catalog or bundle image is pulled; an OperatorGroup and a
// Subscription in a namespace of the test install the bundle as a user would. The tests assert
// against OLM's own objects (CatalogSource, InstallPlan, CSV, Subscription), and every failure
// prints what OLM said.
//
// kwok only pretends to run the Deployment OLM makes, so, once the CSV has Succeeded, the suite
// runs bin/manager as that Deployment's pod: with its arguments and environment, as its
// ServiceAccount (a token of the account OLM created, so OLM's Roles and ClusterRoles are what it
// may do), with the serving certificate of the Secret OLM made for the webhook. The local cluster
// has no Service network, so the webhook Service OLM made is turned into an ExternalName of
// localhost: the apiserver then calls OLM's webhook configurations, with OLM's CA, at
// localhost:443, where the manager serves (so the webhook steps need root, or the capability to
// bind port 443; without it they are skipped and say so).
//
// The catalog holds the previous release's bundle too, which this one replaces: TestOLMUpgrade
// installs that release (its bin/manager and bin/kube-scheduler, built from its commit, run as
// its pods) and has OLM upgrade it to this one.
//
// The tier needs bin/k8s/olm, bin/k8s/catalog and bin/k8s/opm, OLM's CRDs from its module
// (OLM_CRDS), the catalog (OLM_CATALOG) and the previous release's tree and binaries
// (OLM_PREVIOUS); make test-olm builds and sets them all.
package olm

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

var (
	// k8s is an admin client of the local cluster that knows OLM's kinds.
	k8s client.Client
	// cluster is the local cluster.
	cluster *localcluster.Cluster
	// paths are the repository's and the binaries'.
	paths operatorenv.Paths
	// olm is OLM: its two operators and opm.
	olm *olmProcesses
	// previous is the previous release.
	previous previousRelease
	// workDir holds the cluster's files and every process's log; it is removed when every test
	// passed, and kept for a look otherwise.
	workDir string
)

// newScheme is the operator's scheme with CRDs and OLM's kinds.
func newScheme() *runtime.Scheme {
	s := operatorenv.NewScheme()
	utilruntime.Must(operatorsv1alpha1.AddToScheme(s))
	utilruntime.Must(operatorsv1.AddToScheme(s))
	return s
}

func TestMain(m *testing.M) {
	// The tests' watch clients log nothing.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(testutil.RunSuite(m, "olm", setUp, tearDown, func() string { return workDir }))
}

// setUp starts the local cluster with one fake node, installs OLM's CRDs and starts OLM.
func setUp(ctx context.Context) error {
	var err error
	if paths, err = operatorenv.FindPaths(); err != nil {
		return err
	}
	bins, err := findOLM(paths.BinDir)
	if err != nil {
		return err
	}
	if previous, err = findPreviousRelease(); err != nil {
		return err
	}
	if cluster, workDir, err = operatorenv.StartCluster(ctx, paths, "spo-olm-"); err != nil {
		return err
	}
	cfg, err := cluster.RESTConfig()
	if err != nil {
		return err
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: newScheme()}); err != nil {
		return err
	}
	// The node of OLM's operator Deployment, of the profiles' schedulers and of their pods, in a
	// zone for the spread sample's constraint.
	node := localcluster.FakeNode("node", map[string]string{corev1.LabelTopologyZone: "zone-a"}, corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("250"),
	})
	if err := cluster.CreateNodes(ctx, []*corev1.Node{node}); err != nil {
		return err
	}
	start := time.Now()
	if olm, err = startOLM(ctx, bins, cluster.Kubeconfig(), workDir); err != nil {
		return err
	}
	fmt.Printf("OLM started and its catalog READY in %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// tearDown stops OLM and the cluster, whichever were started.
func tearDown() {
	if olm != nil {
		olm.stop()
	}
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the local cluster: %v\n", err)
		}
	}
}
