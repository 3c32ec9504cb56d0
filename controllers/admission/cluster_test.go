package admission

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestAdmissionOfWhatComesFromTheCluster: the webhook refuses, at the extender's secretRef, a
// Secret that the reconcilers would refuse before a rollout (no consent label, a consent that
// lists neither the profile nor the Scheduler, a pair that does not match, HTTPS left without a
// CA), and at the gate a feature gate whose API the cluster does not serve, on a profile and on
// a Scheduler; a Secret that does not exist yet is a warning.
// A client key pair and another key, made once: generating RSA keys is slow.
var (
	cert1, key1 = testutil.KeyPair("client-1")
	_, key2     = testutil.KeyPair("client-2")
)

// secretUsers are the users that the tests' Secrets consent to: the profile "p" and the
// Scheduler "s".
const secretUsers = "p, Scheduler/s"

func TestAdmissionOfWhatComesFromTheCluster(t *testing.T) {
	unlabelled := testutil.ExtenderTLSSecret(testSettings.Namespace, "a", secretUsers, testutil.PairData(cert1, key1, "ca.crt", string(cert1)))
	unlabelled.Labels = nil
	forOthers := testutil.ExtenderTLSSecret(testSettings.Namespace, "a", secretUsers, testutil.PairData(cert1, key1, "ca.crt", string(cert1)))
	forOthers.Annotations[schedulingv1alpha1.AnnotationExtenderTLSFor] = "s,Scheduler/p"
	forEveryone := testutil.ExtenderTLSSecret(testSettings.Namespace, "a", secretUsers, testutil.PairData(cert1, key1, "ca.crt", string(cert1)))
	forEveryone.Annotations[schedulingv1alpha1.AnnotationExtenderTLSFor] = "*"
	const named = "named in an extender's tlsConfig.secretRef"
	// What a 1.37 apiserver serves by default: no composite pod groups.
	served := []*metav1.APIResourceList{
		{GroupVersion: "scheduling.k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "podgroups"}}},
		{GroupVersion: "resource.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "devicetaintrules"}}},
	}
	withoutTaintRules := []*metav1.APIResourceList{{GroupVersion: "resource.k8s.io/v1"}}
	composite := map[string]bool{"GenericWorkload": true, "TopologyAwareWorkloadScheduling": true, "CompositePodGroup": true}
	const compositeMissing = "feature gate CompositePodGroup needs the API scheduling.k8s.io/v1alpha3 compositepodgroups, which the cluster does not serve (kube-apiserver --feature-gates=GenericWorkload=true,CompositePodGroup=true --runtime-config=scheduling.k8s.io/v1alpha3=true serves it); the scheduler would never sync its caches"
	tests := []struct {
		name         string
		secrets      []*corev1.Secret
		resources    []*metav1.APIResourceList
		gates        map[string]bool
		wantCauses   []string
		wantWarnings []string
	}{
		{name: "a labelled Secret with its pair and CA", secrets: []*corev1.Secret{testutil.ExtenderTLSSecret(testSettings.Namespace, "a", secretUsers, testutil.PairData(cert1, key1, "ca.crt", string(cert1)))}},
		{name: "a Secret without consent", secrets: []*corev1.Secret{unlabelled},
			wantCauses: []string{`spec.extenders[0].tlsConfig.secretRef.name: Invalid value: "a": Secret ops/a, ` + named + `, is not labelled scheduling.schedops.io/extender-tls=true: a Secret is used by an extender only when it says so, with that label and "<user>" in its annotation scheduling.schedops.io/extender-tls-for`}},
		{name: "a Secret that consents to another profile and Scheduler", secrets: []*corev1.Secret{forOthers},
			wantCauses: []string{`spec.extenders[0].tlsConfig.secretRef.name: Invalid value: "a": Secret ops/a, ` + named + `, does not consent to <user>: its annotation scheduling.schedops.io/extender-tls-for does not list "<user>"; the Secret's owner adds it there to consent`}},
		{name: "a Secret that consents to everyone", secrets: []*corev1.Secret{forEveryone}},
		{name: "a certificate with another key", secrets: []*corev1.Secret{testutil.ExtenderTLSSecret(testSettings.Namespace, "a", secretUsers, testutil.PairData(cert1, key2, "ca.crt", string(cert1)))},
			wantCauses: []string{`spec.extenders[0].tlsConfig.secretRef.name: Invalid value: "a": Secret ops/a, ` + named + `: tls.crt and tls.key are not a certificate and its key: tls: private key does not match public key`}},
		{name: "HTTPS and a Secret without a CA", secrets: []*corev1.Secret{testutil.ExtenderTLSSecret(testSettings.Namespace, "a", secretUsers, testutil.PairData(cert1, key1))},
			wantCauses: []string{`spec.extenders[0].tlsConfig.secretRef.name: Invalid value: "a": Secret ops/a, named in spec.extenders[0].tlsConfig.secretRef, has no ca.crt and the extender sets no caData: over HTTPS the extender's certificate would not be verified; add a CA, or set tlsConfig.insecure: true to call it unverified`}},
		{name: "a Secret that does not exist yet",
			wantWarnings: []string{`spec.extenders[0].tlsConfig.secretRef.name: Secret ops/a does not exist; nothing is rolled out until it does`}},
		{name: "a gate whose API is served", resources: append(served, &metav1.APIResourceList{GroupVersion: "scheduling.k8s.io/v1alpha3", APIResources: []metav1.APIResource{{Name: "compositepodgroups"}}}), gates: composite},
		{name: "a gate whose API is not served", resources: served, gates: composite,
			wantCauses: []string{"<gates>.CompositePodGroup: Invalid value: " + compositeMissing}},
		{name: "a gate on by default whose API is switched off", resources: withoutTaintRules,
			wantCauses: []string{"<gates>: Invalid value: feature gate DRADeviceTaintRules needs the API resource.k8s.io/v1 devicetaintrules, which the cluster does not serve (kube-apiserver --runtime-config=resource.k8s.io/v1/devicetaintrules=true serves it); the scheduler would never sync its caches; the gate is on by default: set featureGates DRADeviceTaintRules: false to run without the API"}},
	}
	for _, tc := range tests {
		for _, kind := range []string{"SchedulerProfile", "Scheduler"} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				var objs []client.Object
				secrets := tc.secrets
				for _, s := range secrets {
					objs = append(objs, s)
				}
				r := fakePlanner(objs...)
				resources := tc.resources
				if resources == nil {
					resources = served
				}
				r.APIs = plan.NewServedAPIs(&fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: resources}})
				var extenders []schedulingv1alpha1.Extender
				if tc.secrets != nil || tc.wantWarnings != nil {
					extenders = []schedulingv1alpha1.Extender{{URLPrefix: "https://a.example.com/scheduler", FilterVerb: ptr.To("filter"), EnableHTTPS: ptr.To(true),
						TLSConfig: &schedulingv1alpha1.ExtenderTLSConfig{SecretRef: schedulingv1alpha1.ExtenderSecretReference{Name: "a"}}}}
					extenders[0].Ignorable = ptr.To(true) // no warning of its own
				}
				settings := schedulingv1alpha1.SchedulerSettings{FeatureGates: tc.gates}
				var causes []string
				var warnings admission.Warnings
				gates, user := "spec.scheduler.featureGates", "p"
				if kind == "SchedulerProfile" {
					p := testutil.MakeProfile("p").SchedulerSettings(settings).Obj()
					p.Spec.Extenders = extenders
					// The advice that an extender switches off batching, and that autoscalers cannot see its
					// filter, is not what this test is about.
					p.Annotations = map[string]string{schedulingv1alpha1.AnnotationAdviceIgnore: "SPA402,SPA601"}
					w, err := (profileValidatorOf(r)).ValidateCreate(t.Context(), p)
					causes, warnings = testutil.InvalidCauses(t, err), w
				} else {
					gates, user = "spec.featureGates", "Scheduler/s"
					s := testutil.MakeScheduler("s").Obj()
					s.Spec.SchedulerSettings, s.Spec.Extenders = settings, extenders
					w, err := (schedulerValidatorOf(r)).ValidateCreate(t.Context(), s)
					causes, warnings = testutil.InvalidCauses(t, err), w
				}
				want := make([]string, len(tc.wantCauses))
				for i, c := range tc.wantCauses {
					want[i] = strings.ReplaceAll(strings.Replace(c, "<gates>", gates, 1), "<user>", user)
				}
				if diff := cmp.Diff(want, causes, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("causes (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.wantWarnings, []string(warnings), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("warnings (-want +got):\n%s", diff)
				}
			})
		}
	}
}
