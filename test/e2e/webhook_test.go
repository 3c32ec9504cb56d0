package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// webhookLabel selects the profiles the webhook reviews on the local cluster: the other tests
// apply invalid profiles on purpose, to see what the reconciler makes of them.
const webhookLabel = "e2e.schedops.io/webhook"

// setUpWebhook installs the generated webhook configurations (config/webhook) for the operator
// that runs in this process, on localhost: the validating webhook only for profiles labelled
// webhookLabel. It returns the operator's webhook settings.
func setUpWebhook(ctx context.Context, root, dir string) (*controllers.WebhookOptions, error) {
	w, err := operatorenv.InstallLocalWebhooks(ctx, k8s, root, dir, &metav1.LabelSelector{MatchLabels: map[string]string{webhookLabel: "true"}})
	if err != nil {
		return nil, err
	}
	return &controllers.WebhookOptions{Host: "localhost", Port: w.Port, CertDir: w.CertDir}, nil
}

// TestKubectlApplyRefused: `kubectl apply -f` of a broken profile exits non-zero and prints the
// field error, and stores nothing; `--dry-run=server` does the same; a valid profile applies.
func TestKubectlApplyRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const header = "apiVersion: scheduling.schedops.io/v1alpha1\nkind: SchedulerProfile\nmetadata:\n  labels: {" + webhookLabel + ": \"true\"}\n"
	broken := write("broken.yaml", header+`  name: e2e-broken
spec:
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: Most}}
`)
	valid := write("valid.yaml", header+`  name: e2e-admitted
spec:
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
`)
	const fieldError = `spec.pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Most"`

	// The apiserver calls the webhook once it has seen its configuration and the operator serves.
	testutil.Eventually(t, 30*time.Second, "the webhook to review a dry-run apply", func(context.Context) error {
		if out, _ := kubectl(t, "apply", "--dry-run=server", "-f", broken); !strings.Contains(out, fieldError) {
			return fmt.Errorf("kubectl apply --dry-run=server printed %q", out)
		}
		return nil
	})
	for _, args := range [][]string{{"apply", "--dry-run=server", "-f", broken}, {"apply", "-f", broken}} {
		out, err := kubectl(t, args...)
		t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
		if err == nil {
			t.Errorf("kubectl %s exited 0", strings.Join(args, " "))
		}
		if !strings.Contains(out, fieldError) || !strings.Contains(out, `The SchedulerProfile "e2e-broken" is invalid: `) {
			t.Errorf("kubectl %s printed no field error %q", strings.Join(args, " "), fieldError)
		}
	}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: "e2e-broken"}, &schedulingv1alpha1.SchedulerProfile{}); !apierrors.IsNotFound(err) {
		t.Errorf("The broken profile after the refused applies: %v, want NotFound", err)
	}

	if out, err := kubectl(t, "apply", "-f", valid); err != nil {
		t.Fatalf("kubectl apply of a valid profile: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = kubectl(t, "delete", "--ignore-not-found", "-f", valid) })
	waitCondition(t, "e2e-admitted", schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, schedulingv1alpha1.ReasonConfigAccepted, 30*time.Second)
}

// kubectl runs kubectl on the local cluster and returns its combined output.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// The kubectl of the operator's Kubernetes version, which make builds into bin/k8s.
	binDir, err := localcluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "kubectl"), append([]string{"--kubeconfig", cluster.Kubeconfig()}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
