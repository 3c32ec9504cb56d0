package webhook

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// TestMetadataUpdatesWithWebhookDown: with the webhook configuration installed (with its
// matchConditions) and nothing serving it, updates that leave the spec as it is succeed: a label,
// an annotation, a finalizer added and removed, and a foreground deletion, which the garbage
// collector completes with an update of the finalizers; a change of the spec still fails,
// naming the webhook.
func TestMetadataUpdatesWithWebhookDown(t *testing.T) {
	ctx := t.Context()
	const label = "test.schedops.io/metadata-down"
	framework.StartGarbageCollector(t, cfg, k8sClient, namespace)
	// A profile stored while the webhook served, which the suite's operator runs.
	p := testutil.MakeProfile("metadata-down").Obj()
	p.Labels = map[string]string{label: "true"}
	if err := k8sClient.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), p) })
	deployment := client.ObjectKey{Namespace: namespace, Name: p.Name + "-scheduler"}
	testutil.Eventually(t, waitTimeout, "the profile's Deployment", func(ctx context.Context) error {
		return k8sClient.Get(ctx, deployment, &appsv1.Deployment{})
	})

	vwc := rotationWebhookConfig(t, "metadata-down-webhook", label, fmt.Sprintf("https://localhost:%d%s", testutil.FreePort(t), profilePath))
	if len(vwc.Webhooks[0].MatchConditions) == 0 {
		t.Fatal("The installed webhook configuration has no matchConditions")
	}
	if err := k8sClient.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), vwc) })
	specChange := func(ctx context.Context) error {
		return k8sClient.Patch(ctx, p.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"percentageOfNodesToScore":40}}`)), client.DryRunAll)
	}
	testutil.Eventually(t, 10*time.Second, "a change of the spec to reach the unreachable webhook", func(ctx context.Context) error {
		if specChange(ctx) == nil {
			return errors.New("a dry-run change of the spec was admitted")
		}
		return nil
	})
	err := specChange(ctx)
	if err == nil || !strings.Contains(err.Error(), `failed calling webhook "schedulerprofiles.scheduling.schedops.io"`) {
		t.Errorf("A change of the spec while the webhook is down: %v, want an error that names the webhook", err)
	}

	for _, tc := range []struct{ name, patch string }{
		{"a label", `{"metadata":{"labels":{"team":"batch"}}}`},
		{"an annotation", `{"metadata":{"annotations":{"example.com/note":"down"}}}`},
		{"a finalizer", `{"metadata":{"finalizers":["example.com/hold"]}}`},
		{"no finalizer", `{"metadata":{"finalizers":null}}`},
	} {
		if err := k8sClient.Patch(ctx, p.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(tc.patch))); err != nil {
			t.Errorf("Setting %s while the webhook is down: %v", tc.name, err)
		}
	}

	start := time.Now()
	if err := k8sClient.Delete(ctx, p, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatalf("A foreground deletion while the webhook is down: %v", err)
	}
	testutil.Eventually(t, 30*time.Second, "the foreground deletion to complete", func(ctx context.Context) error {
		got := &schedulingv1alpha1.SchedulerProfile{}
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(p), got)
		if err == nil {
			return fmt.Errorf("the profile is still there, finalizers %v", got.Finalizers)
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		if err := k8sClient.Get(ctx, deployment, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("its Deployment: %v, want it gone", err)
		}
		return nil
	})
	t.Logf("The foreground deletion completed in %s", time.Since(start).Round(10*time.Millisecond))
}
