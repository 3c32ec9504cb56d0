package webhook

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/webhooks"
)

// downMargin is what the apiserver may add to the webhook's timeout when it gives up on a hung
// operator: its own work on the request, on a loaded test machine.
const downMargin = 3 * time.Second

// TestPodAssignmentOperatorHung: with the pod webhook of config/webhook calling an operator that
// accepts connections and never answers, a pod the webhook matches is still created, as it is,
// within the webhook's timeoutSeconds plus downMargin (failurePolicy Ignore).
func TestPodAssignmentOperatorHung(t *testing.T) {
	ctx := t.Context()
	const label = "test.schedops.io/hung"
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = listener.Close() })
	var accepted atomic.Int32
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			c, err := listener.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			held = append(held, c)
		}
	}()

	mwc, timeout := hungPodWebhookConfig(t, "assign-hung", label, "https://"+listener.Addr().String()+webhooks.PodAssignerPath)
	if err := k8sClient.Create(ctx, mwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), mwc) })
	// Not labelled for assignment: the operator's own webhook, which serves, is not called.
	ns := assignNamespace(t, "assign-hung", label, "true")

	pod := func(name string) *corev1.Pod {
		return testutil.MakePod(name, ns).Label(label, "true").Obj()
	}
	// The apiserver calls a new configuration once its informer has seen it.
	testutil.Eventually(t, waitTimeout, "the apiserver to call the hung webhook", func(ctx context.Context) error {
		if err := k8sClient.Create(ctx, pod("probe"), client.DryRunAll); err != nil {
			return err
		}
		if accepted.Load() == 0 {
			return errors.New("no call yet")
		}
		return nil
	})

	p := pod("while-hung")
	start := time.Now()
	err = k8sClient.Create(ctx, p)
	took := time.Since(start)
	t.Logf("Creating a pod while the operator hangs took %v (timeout %v)", took, timeout)
	if err != nil {
		t.Fatalf("Creating a pod while the operator hangs: %v", err)
	}
	if took > timeout+downMargin {
		t.Errorf("Creating a pod while the operator hangs took %v, want at most %v", took, timeout+downMargin)
	}
	if p.Spec.SchedulerName != schedulingv1alpha1.DefaultSchedulerName || p.Annotations[schedulingv1alpha1.AnnotationAssignment] != "" {
		t.Errorf("The pod has scheduler %q and annotations %v, want it as created", p.Spec.SchedulerName, p.Annotations)
	}
}

// hungPodWebhookConfig is the generated configuration's pod webhook (its failurePolicy, timeout
// and matchConditions), renamed, called at url without a caBundle, for the pods with label in
// namespaces with label only; and its timeout.
func hungPodWebhookConfig(t *testing.T, name, label, url string) (*admissionregistrationv1.MutatingWebhookConfiguration, time.Duration) {
	t.Helper()
	for _, mwc := range env.WebhookInstallOptions.MutatingWebhooks {
		for _, w := range mwc.Webhooks {
			if w.ClientConfig.URL == nil || !strings.HasSuffix(*w.ClientConfig.URL, webhooks.PodAssignerPath) {
				continue
			}
			if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Ignore || w.TimeoutSeconds == nil {
				t.Fatalf("The pod webhook has failurePolicy %v and timeoutSeconds %v, want Ignore and a timeout", w.FailurePolicy, w.TimeoutSeconds)
			}
			w = *w.DeepCopy()
			w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url)}
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{label: "true"}}
			w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{label: "true"}}
			return &admissionregistrationv1.MutatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Webhooks:   []admissionregistrationv1.MutatingWebhook{w},
			}, time.Duration(*w.TimeoutSeconds) * time.Second
		}
	}
	t.Fatal("The installed configuration has no webhook for pods")
	return nil, 0
}
