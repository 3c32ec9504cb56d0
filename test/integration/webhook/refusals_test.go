package webhook

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// maxMembers is the suite's member limit (ManagerOptions.MaxMembersPerScheduler): the shared
// sample has as many members.
const maxMembers = 3

// Who refuses a create: the CRD's schema and rules in the apiserver, or the operator's webhook.
const (
	byCRD     = "CRD"
	byWebhook = "webhook"
)

// TestRefusedAtCreate: what a profile author can reach through the operator, and inputs that
// would pass but break a scheduler or its Scheduler later (issue 25), are refused when the object
// is created, each with its field and message, by the CRD or by the operator's webhook; the
// settings within bounds are admitted. In want, <bytes> stands for the rendered size.
func TestRefusedAtCreate(t *testing.T) {
	certPEM, keyPEM := testutil.KeyPair("refusals-client")
	_, otherKey := testutil.KeyPair("refusals-other")
	// secret consents to users (schedulingv1alpha1.AnnotationExtenderTLSFor), or is not labelled for
	// extenders at all when users is "".
	secret := func(name, users string, key []byte) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Data: map[string][]byte{"tls.crt": certPEM, "tls.key": key, "ca.crt": certPEM}}
		if users != "" {
			s.Labels = map[string]string{schedulingv1alpha1.LabelExtenderTLS: "true"}
			s.Annotations = map[string]string{schedulingv1alpha1.AnnotationExtenderTLSFor: users}
		}
		return s
	}
	extender := func(secret string) schedulingv1alpha1.Extender {
		return schedulingv1alpha1.Extender{URLPrefix: "https://extender.example.com/scheduler", FilterVerb: ptr.To("filter"), Ignorable: ptr.To(true),
			EnableHTTPS: ptr.To(true), TLSConfig: &schedulingv1alpha1.ExtenderTLSConfig{SecretRef: schedulingv1alpha1.ExtenderSecretReference{Name: secret}}}
	}
	zone := func(term corev1.PodAffinityTerm) corev1.PodAffinityTerm {
		term.TopologyKey = "topology.kubernetes.io/zone"
		term.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
		return term
	}
	settings := func(name string, s schedulingv1alpha1.SchedulerSettings) *schedulingv1alpha1.SchedulerProfile {
		return testutil.MakeProfile(name).SchedulerSettings(s).Obj()
	}
	scheduler := func(name string, s schedulingv1alpha1.SchedulerSettings, extenders ...schedulingv1alpha1.Extender) *schedulingv1alpha1.Scheduler {
		obj := testutil.MakeScheduler(name).Obj()
		obj.Spec.SchedulerSettings, obj.Spec.Extenders = s, extenders
		return obj
	}
	withExtender := func(name, secret string) *schedulingv1alpha1.SchedulerProfile {
		p := testutil.MakeProfile(name).Obj()
		p.Spec.Extenders = []schedulingv1alpha1.Extender{extender(secret)}
		return p
	}
	var members []client.Object
	for i := range maxMembers {
		members = append(members, testutil.MakeProfile(fmt.Sprintf("refuse-full-%d", i)).SchedulerRef("refuse-full").Obj())
	}
	var prefs []string
	for i := range 12000 {
		prefs = append(prefs, fmt.Sprintf(`{"key": "example.com/label-%05d-abcdefghijklmnopqrstuvwxyz", "values": ["value-%05d-abcdefghij"]}`, i, i))
	}
	largeArgs := `{"preferences": [` + strings.Join(prefs, ",") + `]}`
	labels := map[string]string{}
	for i := range 65 {
		labels[fmt.Sprintf("example.com/l%d", i)] = "x"
	}
	var tolerations []corev1.Toleration
	for i := range 65 {
		tolerations = append(tolerations, corev1.Toleration{Key: fmt.Sprintf("t%d", i), Operator: corev1.TolerationOpExists})
	}
	// The apiserver skips the CEL rules of an object that its schema refuses.
	const notChecked = "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
	const affinityOut = "Forbidden: the scheduler pods' affinity may only select pods of the operator's namespace: leave it out"
	const allowlist = `(--allowed-priority-classes, set by the cluster admin)`
	const podGroups = "feature gate GenericWorkload needs the API scheduling.k8s.io/v1beta1 podgroups, which the cluster does not serve (kube-apiserver --feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true serves it); the scheduler would never sync its caches"
	const tooLarge = "the configuration of Scheduler refuse-sized would be <bytes> bytes, more than the 983040 a ConfigMap can hold with its metadata; it is not rolled out, and the other profiles are"
	tests := []struct {
		name string
		// setup is created first, in order, and deleted after.
		setup []client.Object
		obj   client.Object
		by    string
		want  []string
	}{
		// Limits.
		{name: "member over the member limit", setup: append([]client.Object{testutil.MakeScheduler("refuse-full").Obj()}, members...),
			obj: testutil.MakeProfile("refuse-full-next").SchedulerRef("refuse-full").Obj(), by: byWebhook,
			want: []string{fmt.Sprintf("spec.schedulerRef.name: Forbidden: Scheduler refuse-full serves its maximum of %d profiles; this one is not served until another leaves", maxMembers)}},
		{name: "member whose entry is too large", setup: []client.Object{testutil.MakeScheduler("refuse-sized").Obj()},
			obj: testutil.MakeProfile("refuse-sized-big").SchedulerRef("refuse-sized").PluginConfig("NodeLabelPreference", largeArgs).Obj(), by: byWebhook,
			want: []string{"spec.schedulerRef.name: Forbidden: with this profile " + tooLarge}},
		{name: "profile whose configuration is too large",
			obj: testutil.MakeProfile("refuse-big").PluginConfig("NodeLabelPreference", largeArgs).Obj(), by: byWebhook,
			want: []string{"spec: Invalid value: the rendered configuration would be <bytes> bytes, more than the 983040 a ConfigMap can hold with its metadata"}},
		// Bounds of the schema.
		{name: "too many node selector labels", obj: settings("refuse-labels", schedulingv1alpha1.SchedulerSettings{NodeSelector: labels}), by: byCRD,
			want: []string{"spec.scheduler.nodeSelector: Too many: 65: must have at most 64 items", notChecked}},
		{name: "node selector value longer than a label value", by: byCRD,
			obj:  settings("refuse-label-value", schedulingv1alpha1.SchedulerSettings{NodeSelector: map[string]string{"pool": strings.Repeat("a", 64)}}),
			want: []string{`spec.scheduler.nodeSelector: Invalid value: nodeSelector keys are at most 317 characters and values at most 63, as for labels`}},
		{name: "too many tolerations", obj: scheduler("refuse-tolerations", schedulingv1alpha1.SchedulerSettings{Tolerations: tolerations}), by: byCRD,
			want: []string{"spec.tolerations: Too many: 65: must have at most 64 items", notChecked}},
		{name: "toleration value longer than a label value", by: byCRD,
			obj:  settings("refuse-toleration", schedulingv1alpha1.SchedulerSettings{Tolerations: []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpEqual, Value: strings.Repeat("v", 64)}}}),
			want: []string{"spec.scheduler.tolerations: Invalid value: a toleration's key is at most 317 characters and its value at most 63, as for labels, and its operator and effect at most 32"}},
		{name: "feature gate name too long", by: byCRD,
			obj:  scheduler("refuse-gate-name", schedulingv1alpha1.SchedulerSettings{FeatureGates: map[string]bool{strings.Repeat("G", 129): true}}),
			want: []string{`spec.featureGates: Invalid value: feature gate names are at most 128 characters`}},
		// Gates and their APIs.
		{name: "profile with a gate whose API is not served", obj: settings("refuse-gate", schedulingv1alpha1.SchedulerSettings{FeatureGates: map[string]bool{"GenericWorkload": true}}), by: byWebhook,
			want: []string{"spec.scheduler.featureGates.GenericWorkload: Invalid value: " + podGroups}},
		{name: "Scheduler with a gate whose API is not served", obj: scheduler("refuse-gate", schedulingv1alpha1.SchedulerSettings{FeatureGates: map[string]bool{"GenericWorkload": true}}), by: byWebhook,
			want: []string{"spec.featureGates.GenericWorkload: Invalid value: " + podGroups}},
		// The scheduler pods' priority class and affinity.
		{name: "priority class not allowed", obj: settings("refuse-priority", schedulingv1alpha1.SchedulerSettings{PriorityClassName: ptr.To("system-node-critical")}), by: byWebhook,
			want: []string{`spec.scheduler.priorityClassName: Forbidden: priority class "system-node-critical" is not allowed for scheduler pods; the operator allows "system-cluster-critical" ` + allowlist}},
		{name: "Scheduler priority class not allowed", obj: scheduler("refuse-priority", schedulingv1alpha1.SchedulerSettings{PriorityClassName: ptr.To("high")}), by: byWebhook,
			want: []string{`spec.priorityClassName: Forbidden: priority class "high" is not allowed for scheduler pods; the operator allows "system-cluster-critical" ` + allowlist}},
		{name: "allowed priority class", obj: settings("admit-priority", schedulingv1alpha1.SchedulerSettings{PriorityClassName: ptr.To("system-cluster-critical")})},
		{name: "anti-affinity with every namespace", by: byWebhook,
			obj: settings("refuse-affinity", schedulingv1alpha1.SchedulerSettings{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{zone(corev1.PodAffinityTerm{NamespaceSelector: &metav1.LabelSelector{}})}}}}),
			want: []string{"spec.scheduler.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector: " + affinityOut}},
		{name: "Scheduler affinity with other namespaces", by: byWebhook,
			obj: scheduler("refuse-affinity", schedulingv1alpha1.SchedulerSettings{Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: zone(corev1.PodAffinityTerm{Namespaces: []string{"team-a"}})}}}}}),
			want: []string{"spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.namespaces: " + affinityOut}},
		{name: "anti-affinity in the operator's namespace",
			obj: settings("admit-affinity", schedulingv1alpha1.SchedulerSettings{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{zone(corev1.PodAffinityTerm{})}}}})},
		// The admin's caps on the scheduler pods' resources and tolerations, at their defaults.
		{name: "requests and limits past the caps", by: byWebhook,
			obj: settings("refuse-resources", schedulingv1alpha1.SchedulerSettings{Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}, Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Gi")}}}),
			want: []string{
				"spec.scheduler.resources.requests[cpu]: Forbidden: a cpu request of 8 is more than scheduler pods may have; the operator allows at most 4 (--max-scheduler-cpu, set by the cluster admin)",
				"spec.scheduler.resources.limits[memory]: Forbidden: a memory limit of 64Gi is more than scheduler pods may have; the operator allows at most 8Gi (--max-scheduler-memory, set by the cluster admin)",
			}},
		// Admitted on main before the allow-list of resources (--allowed-scheduler-resources).
		{name: "a GPU for the scheduler pods", by: byWebhook,
			obj: settings("refuse-gpu", schedulingv1alpha1.SchedulerSettings{Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}, Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}),
			want: []string{
				"spec.scheduler.resources.requests[nvidia.com/gpu]: Forbidden: scheduler pods may not have a nvidia.com/gpu request: the operator allows cpu and memory only (--allowed-scheduler-resources, set by the cluster admin)",
				"spec.scheduler.resources.limits[nvidia.com/gpu]: Forbidden: scheduler pods may not have a nvidia.com/gpu limit: the operator allows cpu and memory only (--allowed-scheduler-resources, set by the cluster admin)",
			}},
		{name: "Scheduler toleration of every taint", by: byWebhook,
			obj:  scheduler("refuse-tolerate-all", schedulingv1alpha1.SchedulerSettings{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}),
			want: []string{"spec.tolerations[0]: Forbidden: a toleration without a key and with operator Exists tolerates every taint, and would put the scheduler pods on any node; name the taint's key (the operator allows it only with --allow-tolerate-all-taints, set by the cluster admin)"}},
		{name: "resources at the caps and a toleration of a named taint",
			obj: settings("admit-resources", schedulingv1alpha1.SchedulerSettings{
				Resources:   corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}},
				Tolerations: []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			})},
		// Extender Secrets.
		{name: "extender Secret without the label", setup: []client.Object{secret("refuse-unlabelled", "", keyPEM)},
			obj: withExtender("refuse-secret", "refuse-unlabelled"), by: byWebhook,
			want: []string{fmt.Sprintf(`spec.extenders[0].tlsConfig.secretRef.name: Invalid value: "refuse-unlabelled": Secret %s/refuse-unlabelled, named in an extender's tlsConfig.secretRef, is not labelled scheduling.schedops.io/extender-tls=true: a Secret is used by an extender only when it says so, with that label and "refuse-secret" in its annotation scheduling.schedops.io/extender-tls-for`, namespace)}},
		// Team B names team A's Secret, which consents to A's profile only.
		{name: "extender Secret that consents to another profile", setup: []client.Object{secret("refuse-team-a", "team-a", keyPEM)},
			obj: withExtender("refuse-team-b", "refuse-team-a"), by: byWebhook,
			want: []string{fmt.Sprintf(`spec.extenders[0].tlsConfig.secretRef.name: Invalid value: "refuse-team-a": Secret %s/refuse-team-a, named in an extender's tlsConfig.secretRef, does not consent to refuse-team-b: its annotation scheduling.schedops.io/extender-tls-for does not list "refuse-team-b"; the Secret's owner adds it there to consent`, namespace)}},
		{name: "Scheduler extender Secret that consents to a profile of the same name", setup: []client.Object{secret("refuse-for-profile", "refuse-secret", keyPEM)},
			obj: scheduler("refuse-secret", schedulingv1alpha1.SchedulerSettings{}, extender("refuse-for-profile")), by: byWebhook,
			want: []string{fmt.Sprintf(`spec.extenders[0].tlsConfig.secretRef.name: Invalid value: "refuse-for-profile": Secret %s/refuse-for-profile, named in an extender's tlsConfig.secretRef, does not consent to Scheduler/refuse-secret: its annotation scheduling.schedops.io/extender-tls-for does not list "Scheduler/refuse-secret"; the Secret's owner adds it there to consent`, namespace)}},
		{name: "Scheduler extender Secret whose pair does not match", setup: []client.Object{secret("refuse-mismatched", "Scheduler/refuse-secret", otherKey)},
			obj: scheduler("refuse-secret", schedulingv1alpha1.SchedulerSettings{}, extender("refuse-mismatched")), by: byWebhook,
			want: []string{fmt.Sprintf(`spec.extenders[0].tlsConfig.secretRef.name: Invalid value: "refuse-mismatched": Secret %s/refuse-mismatched, named in an extender's tlsConfig.secretRef: tls.crt and tls.key are not a certificate and its key: tls: private key does not match public key`, namespace)}},
		{name: "extender Secret that consents to the profile", setup: []client.Object{secret("admit-labelled", "other, admit-secret", keyPEM)}, obj: withExtender("admit-secret", "admit-labelled")},
		{name: "extender Secret that consents to everyone", setup: []client.Object{secret("admit-everyone", "*", keyPEM)}, obj: withExtender("admit-secret-everyone", "admit-everyone")},
		{name: "Scheduler extender Secret that consents to the Scheduler", setup: []client.Object{secret("admit-scheduler", "Scheduler/admit-secret-shared", keyPEM)},
			obj: scheduler("admit-secret-shared", schedulingv1alpha1.SchedulerSettings{}, extender("admit-scheduler"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			for _, obj := range tc.setup {
				if err := k8sClient.Create(ctx, obj); err != nil {
					t.Fatalf("Creating %s: %v", obj.GetName(), err)
				}
				t.Cleanup(func() { deleteNow(obj) })
			}
			err := k8sClient.Create(ctx, tc.obj)
			if err == nil {
				t.Cleanup(func() { deleteNow(tc.obj) })
			}
			got := testutil.InvalidCauses(t, err)
			if len(got) != len(tc.want) {
				t.Fatalf("causes %q, want %q", got, tc.want)
			}
			for i, want := range tc.want {
				pattern := "^" + strings.ReplaceAll(regexp.QuoteMeta(want), "<bytes>", "[0-9]+") + "$"
				if !regexp.MustCompile(pattern).MatchString(got[i]) {
					t.Errorf("cause %d:\n  got:  %q\n  want: %q", i, got[i], want)
				}
			}
			if webhook := err != nil && strings.Contains(err.Error(), "admission webhook"); tc.by != "" && webhook != (tc.by == byWebhook) {
				t.Errorf("refused by the webhook: %v, want the %s to refuse it", webhook, tc.by)
			}
		})
	}
}

// deleteNow deletes obj, without waiting for what it owns.
func deleteNow(obj client.Object) {
	_ = k8sClient.Delete(context.Background(), obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
}
