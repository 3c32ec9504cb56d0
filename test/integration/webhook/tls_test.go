package webhook

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// warningClient is a client of the suite's apiserver that records the warnings it receives.
func warningClient(t *testing.T) (client.Client, *testutil.Warnings) {
	t.Helper()
	return testutil.WarningClient(t, cfg, operatorenv.NewScheme())
}

// TestHTTPSExtenderNeedsACAOrInsecure: an HTTPS extender without a CA is refused at create with
// the field path (kube-scheduler would call it unverified without a word); with insecure: true it
// is admitted with a warning.
func TestHTTPSExtenderNeedsACAOrInsecure(t *testing.T) {
	ctx := t.Context()
	https := func(tls *schedulingv1alpha1.ExtenderTLSConfig) []schedulingv1alpha1.Extender {
		return []schedulingv1alpha1.Extender{{URLPrefix: "https://extender.example.com/scheduler", PrioritizeVerb: ptr.To("prioritize"), Weight: ptr.To[int64](1), EnableHTTPS: ptr.To(true), TLSConfig: tls}}
	}
	p := testutil.MakeProfile("https-unverified").Obj()
	p.Spec.Extenders = https(nil)
	want := []string{"spec.extenders[0].tlsConfig.caData: Required value: enableHTTPS without a CA does not verify the extender's certificate: set caData, or a secretRef whose Secret has ca.crt, or insecure: true to call it unverified"}
	if diff := cmp.Diff(want, testutil.InvalidCauses(t, k8sClient.Create(ctx, p))); diff != "" {
		t.Errorf("The refusal of a profile (-want +got):\n%s", diff)
	}
	s := testutil.MakeScheduler("https-bad-ca").Obj()
	s.Spec.Extenders = https(&schedulingv1alpha1.ExtenderTLSConfig{CAData: []byte("not a certificate")})
	want = []string{"spec.extenders[0].tlsConfig.caData: Invalid value: holds no PEM certificate"}
	if diff := cmp.Diff(want, testutil.InvalidCauses(t, k8sClient.Create(ctx, s))); diff != "" {
		t.Errorf("The refusal of a Scheduler (-want +got):\n%s", diff)
	}

	c, recorded := warningClient(t)
	insecure := testutil.MakeProfile("https-insecure").Obj()
	insecure.Spec.Extenders = https(&schedulingv1alpha1.ExtenderTLSConfig{Insecure: ptr.To(true)})
	if err := c.Create(ctx, insecure); err != nil {
		t.Fatalf("An HTTPS extender with insecure: true was refused: %v", err)
	}
	t.Cleanup(func() {
		_ = k8sClient.Delete(context.Background(), insecure, client.PropagationPolicy(metav1.DeletePropagationBackground))
	})
	got := recorded.Take()
	// The second is advice: an extender switches off the scheduler's batching.
	wantWarnings := []string{"spec.extenders[0].tlsConfig.insecure: the extender's certificate is not verified", "SPA402: "}
	if len(got) != len(wantWarnings) {
		t.Fatalf("Warnings %q, want %d starting with %q", got, len(wantWarnings), wantWarnings)
	}
	for i, want := range wantWarnings {
		if !strings.HasPrefix(got[i], want) {
			t.Errorf("Warning %q, want one starting %q", got[i], want)
		}
	}
}
