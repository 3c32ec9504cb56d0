// Package webhook holds the tests of the validating admission webhook on a real kube-apiserver
// (envtest) with the webhook configuration of config/webhook installed, calling the operator that
// runs in the test process. They have an apiserver of their own: the other integration tests
// create invalid profiles on purpose, to see what the reconcilers make of them.
package webhook

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

const (
	// namespace is the operator's namespace.
	namespace = operatorenv.Namespace
	// waitTimeout bounds every wait for the apiserver or the operator.
	waitTimeout = 30 * time.Second
)

var (
	// cfg reaches the envtest apiserver as an administrator.
	cfg *rest.Config
	// k8sClient is a client of cfg that knows the operator's types.
	k8sClient client.Client
	// env is the apiserver with the webhook configuration installed.
	env *envtest.Environment
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
	env = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		// The generated configuration, pointed by envtest at a local port with its own CA.
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join("..", "..", "..", "config", "webhook", "manifests.yaml")}},
	}
	var err error
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
		}
	}()
	if k8sClient, err = client.New(cfg, client.Options{Scheme: operatorenv.NewScheme()}); err != nil {
		fmt.Fprintf(os.Stderr, "creating the client: %v\n", err)
		return 1
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		fmt.Fprintf(os.Stderr, "creating the namespace: %v\n", err)
		return 1
	}
	wio := &env.WebhookInstallOptions
	op, err := framework.Start(cfg, controllers.ManagerOptions{
		Namespace:      namespace,
		SchedulerImage: operatorenv.SchedulerImage,
		// The allowlist the priority class tests expect.
		AllowedPriorityClasses: []string{"system-cluster-critical"},
		// The member limit TestRefusedAtCreate reaches.
		MaxMembersPerScheduler: maxMembers,
		Webhook:                &controllers.WebhookOptions{Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the operator: %v\n", err)
		return 1
	}
	defer func() {
		if err := op.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	if err := waitServing(wio.LocalServingHost, wio.LocalServingPort, waitTimeout); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n%s", err, op.Log)
		return 1
	}
	// The apiserver calls the webhook once its informer has seen the installed configuration.
	invalid := testutil.MakeProfile("suite-webhook-ready").PluginConfig("NodeResourcesFit", invalidScoring).Obj()
	err = testutil.Poll(context.Background(), waitTimeout, func(ctx context.Context) error {
		if err := k8sClient.Create(ctx, invalid.DeepCopy(), client.DryRunAll); !apierrors.IsInvalid(err) {
			return fmt.Errorf("a dry-run create of an invalid profile: %v, want the webhook's refusal", err)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// waitServing waits until a TLS server answers at host:port.
func waitServing(host string, port int, timeout time.Duration) error {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	err := testutil.Poll(context.Background(), timeout, func(context.Context) error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only whether it serves
		if err != nil {
			return err
		}
		return conn.Close()
	})
	if err != nil {
		return fmt.Errorf("the webhook does not serve at %s: %w", addr, err)
	}
	return nil
}
