// Package integration holds the tests that need a real kube-apiserver and etcd (envtest).
// The binaries come from `make k8s-binaries` (bin/k8s), passed in KUBEBUILDER_ASSETS.
package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
)

var (
	// cfg reaches the envtest apiserver as an administrator.
	cfg *rest.Config
	// k8sClient is a client of cfg that knows the SchedulerProfile types.
	k8sClient client.Client
)

func TestMain(m *testing.M) {
	// The operator's previews start this binary as their worker (os.Executable).
	if len(os.Args) > 1 && os.Args[1] == controllers.PreviewWorkerCommand {
		os.Exit(controllers.RunPreviewWorker(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run these tests with `make test-integration`, which builds bin/k8s")
		return 1
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	cfg, err = env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
		}
	}()
	scheme := operatorenv.NewScheme()
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating the client: %v\n", err)
		return 1
	}
	return m.Run()
}
