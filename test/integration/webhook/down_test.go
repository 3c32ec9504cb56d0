package webhook

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestOperatorDown: with the webhook unreachable (a configuration calling a port nothing serves,
// for labelled profiles only), an apply of a profile fails with the apiserver's message naming
// the webhook, failurePolicy Fail; other kinds are not sent to it and are unaffected, and a
// profile can still be deleted.
func TestOperatorDown(t *testing.T) {
	ctx := t.Context()
	const label = "test.schedops.io/down"
	// A labelled profile stored while the webhook served.
	stored := testutil.MakeProfile("down-stored").Obj()
	stored.Labels = map[string]string{label: "true"}
	if err := k8sClient.Create(ctx, stored); err != nil {
		t.Fatal(err)
	}
	vwc := rotationWebhookConfig(t, "down-webhook", label, fmt.Sprintf("https://localhost:%d%s", testutil.FreePort(t), profilePath))
	if err := k8sClient.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), vwc) })

	p := testutil.MakeProfile("down").Obj()
	p.Labels = map[string]string{label: "true"}
	// The apiserver calls a new webhook configuration once its informer has seen it; dry runs
	// store nothing while it has not.
	testutil.Eventually(t, 10*time.Second, "a dry-run create to reach the new webhook configuration", func(ctx context.Context) error {
		if err := k8sClient.Create(ctx, p.DeepCopy(), client.DryRunAll); err == nil {
			return errors.New("a dry-run create was admitted")
		}
		return nil
	})
	err := k8sClient.Create(ctx, p)
	t.Logf("Create while the webhook is down: %v", err)
	if err == nil || !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "schedulerprofiles.scheduling.schedops.io"`) {
		t.Errorf("Create while the webhook is down: %v, want an error that names the webhook", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "unaffected"}}
	if err := k8sClient.Create(ctx, cm); err != nil {
		t.Errorf("A ConfigMap while the webhook is down: %v", err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), cm) })

	if err := k8sClient.Delete(ctx, stored); err != nil {
		t.Errorf("Delete of a labelled profile while the webhook is down: %v", err)
	}
}
