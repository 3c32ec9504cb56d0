package core

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/deploy"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// withTLSExtenders returns a profile whose extenders use the named Secrets for their client
// certificates.
func withTLSExtenders(name string, secrets ...string) *schedulingv1alpha1.SchedulerProfile {
	p := testutil.MakeProfile(name).Obj()
	for _, s := range secrets {
		p.Spec.Extenders = append(p.Spec.Extenders, schedulingv1alpha1.Extender{
			URLPrefix: "https://" + s + ".example.com/scheduler", FilterVerb: ptr.To("filter"), EnableHTTPS: ptr.To(true),
			TLSConfig: &schedulingv1alpha1.ExtenderTLSConfig{SecretRef: schedulingv1alpha1.ExtenderSecretReference{Name: s}},
		})
	}
	return p
}

// TestBuildDeploymentMountsExtenderSecrets: each Secret is mounted once, read-only, where the
// rendered configuration reads it, and its content hash is on the pod template.
func TestBuildDeploymentMountsExtenderSecrets(t *testing.T) {
	p := withTLSExtenders("tls", "b-client", "a-client", "b-client")
	proc := dedicated(p)
	proc.Secrets.Hash = "0123456789"
	proc.Secrets.WithCA = sets.New("b-client")
	d := testutil.Typed[appsv1.Deployment](t, deploy.Deployment(proc, testSettings, testConfig(t, p)))
	spec := d.Spec.Template.Spec

	// Only the keys the scheduler reads: a ca.key or anything else in the Secret stays out.
	pair := []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}}
	wantVolumes := []corev1.Volume{
		{Name: "extender-tls-0", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "a-client", Items: pair}}},
		{Name: "extender-tls-1", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "b-client",
			Items: append(pair, corev1.KeyToPath{Key: "ca.crt", Path: "ca.crt"})}}},
	}
	if diff := cmp.Diff(wantVolumes, spec.Volumes[2:]); diff != "" {
		t.Errorf("Secret volumes (-want +got):\n%s", diff)
	}
	wantMounts := []corev1.VolumeMount{
		{Name: "extender-tls-0", MountPath: "/etc/kubernetes/extenders/a-client", ReadOnly: true},
		{Name: "extender-tls-1", MountPath: "/etc/kubernetes/extenders/b-client", ReadOnly: true},
	}
	if diff := cmp.Diff(wantMounts, spec.Containers[0].VolumeMounts[2:]); diff != "" {
		t.Errorf("Secret mounts (-want +got):\n%s", diff)
	}
	if got := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationExtenderSecretsHash]; got != "0123456789" {
		t.Errorf("annotation %s = %q, want the Secrets' hash", schedulingv1alpha1.AnnotationExtenderSecretsHash, got)
	}
}

// TestRotatedSecretRollsOnlyThePods: a new Secret content is a new pod template revision (a
// rolling update) with the same configuration, ConfigMap and config hash; a profile without
// Secrets has no annotation, so its pod template is what it was before Secrets existed.
func TestRotatedSecretRollsOnlyThePods(t *testing.T) {
	p := withTLSExtenders("tls", "client")
	cfg := testConfig(t, p)
	build := func(hash string) *appsv1.Deployment {
		proc := dedicated(p)
		proc.Secrets.Hash = hash
		return testutil.Typed[appsv1.Deployment](t, deploy.Deployment(proc, testSettings, cfg))
	}
	before, after := build("aaaaaaaaaa"), build("bbbbbbbbbb")
	if before.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision] == after.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision] {
		t.Error("a rotated Secret kept the pod template revision; the scheduler would not restart")
	}
	if before.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash] != after.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash] ||
		before.Spec.Template.Spec.Volumes[0].ConfigMap.Name != after.Spec.Template.Spec.Volumes[0].ConfigMap.Name {
		t.Error("a rotated Secret changed the configuration or its ConfigMap")
	}

	plain := testutil.MakeProfile("plain").Obj()
	d := testutil.Typed[appsv1.Deployment](t, deploy.Deployment(dedicated(plain), testSettings, testConfig(t, plain)))
	if _, ok := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationExtenderSecretsHash]; ok || len(d.Spec.Template.Spec.Volumes) != 2 {
		t.Errorf("a profile without extender Secrets has annotations %v and %d volumes, want no Secret hash and 2 volumes",
			d.Spec.Template.Annotations, len(d.Spec.Template.Spec.Volumes))
	}
}

// testSecretUsers are the users that tlsSecret consents to: the profile "p" and the Scheduler
// "s" of the tests.
const testSecretUsers = "p, Scheduler/s"

// tlsSecret is a Secret of the operator's namespace with data that consents to extender use by
// testSecretUsers.
func tlsSecret(name string, data map[string][]byte) *corev1.Secret {
	return testutil.ExtenderTLSSecret(testSettings.Namespace, name, testSecretUsers, data)
}

// Two client key pairs, made once: generating RSA keys is slow.
var (
	cert1, key1 = testutil.KeyPair("client-1")
	cert2, key2 = testutil.KeyPair("client-2")
)

func TestReadExtenderSecrets(t *testing.T) {
	full := testutil.PairData(cert1, key1)
	withCA := testutil.PairData(cert2, key2, "ca.crt", string(cert2))
	unlabelled := tlsSecret("b", full)
	unlabelled.Labels = nil
	forOthers := tlsSecret("b", full)
	forOthers.Annotations[schedulingv1alpha1.AnnotationExtenderTLSFor] = "q, Scheduler/p"
	const named = "named in an extender's tlsConfig.secretRef"
	tests := []struct {
		name       string
		secrets    []*corev1.Secret
		insecure   bool
		wantReason string
		want       string
		wantCA     []string
	}{
		{name: "both Secrets with their keys", secrets: []*corev1.Secret{tlsSecret("a", withCA), tlsSecret("b", withCA)}, wantCA: []string{"a", "b"}},
		{name: "without a CA, insecure", insecure: true, secrets: []*corev1.Secret{tlsSecret("a", full), tlsSecret("b", withCA)}, wantCA: []string{"b"}},
		{name: "a Secret is missing", secrets: []*corev1.Secret{tlsSecret("a", withCA)},
			wantReason: "SecretNotFound", want: `Secret ops/b, ` + named + `, does not exist`},
		{name: "a Secret has no key", secrets: []*corev1.Secret{tlsSecret("a", withCA), tlsSecret("b", map[string][]byte{"tls.crt": cert1})},
			wantReason: "SecretNotFound", want: `Secret ops/b, ` + named + `, has no key "tls.key"`},
		{name: "a Secret in another namespace does not count", secrets: []*corev1.Secret{tlsSecret("a", withCA), {ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b", Labels: map[string]string{schedulingv1alpha1.LabelExtenderTLS: "true"}}, Data: full}},
			wantReason: "SecretNotFound", want: `Secret ops/b, ` + named + `, does not exist`},
		{name: "a Secret without consent", secrets: []*corev1.Secret{tlsSecret("a", withCA), unlabelled},
			wantReason: "SecretInvalid", want: `Secret ops/b, ` + named + `, is not labelled scheduling.schedops.io/extender-tls=true: a Secret is used by an extender only when it says so, with that label and "p" in its annotation scheduling.schedops.io/extender-tls-for`},
		{name: "a Secret that consents to others", secrets: []*corev1.Secret{tlsSecret("a", withCA), forOthers},
			wantReason: "SecretInvalid", want: `Secret ops/b, ` + named + `, does not consent to p: its annotation scheduling.schedops.io/extender-tls-for does not list "p"; the Secret's owner adds it there to consent`},
		{name: "a certificate with another key", secrets: []*corev1.Secret{tlsSecret("a", withCA), tlsSecret("b", testutil.PairData(cert1, key2, "ca.crt", string(cert2)))},
			wantReason: "SecretInvalid", want: `Secret ops/b, ` + named + `: tls.crt and tls.key are not a certificate and its key: tls: private key does not match public key`},
		{name: "a CA that is no certificate", secrets: []*corev1.Secret{tlsSecret("a", withCA), tlsSecret("b", testutil.PairData(cert1, key1, "ca.crt", "ca"))},
			wantReason: "SecretInvalid", want: `Secret ops/b, ` + named + `: ca.crt holds no PEM certificate`},
		{name: "insecure with a CA", insecure: true, secrets: []*corev1.Secret{tlsSecret("a", withCA), tlsSecret("b", withCA)},
			wantReason: "SecretInvalid", want: `Secret ops/a, named in spec.extenders[0].tlsConfig.secretRef, has ca.crt and the extender sets insecure: true: the scheduler's TLS client refuses a CA with insecure; remove insecure, or ca.crt from the Secret`},
		{name: "HTTPS without a CA", secrets: []*corev1.Secret{tlsSecret("a", full), tlsSecret("b", withCA)},
			wantReason: "SecretInvalid", want: `Secret ops/a, named in spec.extenders[0].tlsConfig.secretRef, has no ca.crt and the extender sets no caData: over HTTPS the extender's certificate would not be verified; add a CA, or set tlsConfig.insecure: true to call it unverified`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var objs []client.Object
			for _, s := range tc.secrets {
				objs = append(objs, s)
			}
			r := fakeObjects(objs...)
			p := withTLSExtenders("p", "a", "b")
			if tc.insecure {
				p.Spec.Extenders[0].TLSConfig.Insecure = ptr.To(true)
			}
			proc := dedicated(p)
			refusal, err := r.ReadExtenderSecrets(t.Context(), proc)
			if err != nil {
				t.Fatal(err)
			}
			if refusal.Reason != tc.wantReason || refusal.Message != tc.want {
				t.Errorf("refusal %s %q, want %s %q", refusal.Reason, refusal.Message, tc.wantReason, tc.want)
			}
			if tc.want == "" && (len(proc.Secrets.Hash) != 10 || !cmp.Equal(sets.List(proc.Secrets.WithCA), tc.wantCA)) {
				t.Errorf("hash %q and Secrets with a CA %v, want 10 characters and %v", proc.Secrets.Hash, sets.List(proc.Secrets.WithCA), tc.wantCA)
			}
		})
	}
}

// TestSecretConsent: a Secret consents to the process that mounts it only with the label and
// the process's name in its annotation, or "*": a profile by its name, a Scheduler as
// "Scheduler/<name>", never by a prefix or another kind's name.
func TestSecretConsent(t *testing.T) {
	profileP := dedicated(testutil.MakeProfile("p").Obj())
	schedulerP := plan.SharedProcess(testutil.MakeScheduler("p").Obj())
	secret := func(label string, annotation *string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testSettings.Namespace, Name: "a"}}
		if label != "" {
			s.Labels = map[string]string{schedulingv1alpha1.LabelExtenderTLS: label}
		}
		if annotation != nil {
			s.Annotations = map[string]string{schedulingv1alpha1.AnnotationExtenderTLSFor: *annotation}
		}
		return s
	}
	const (
		unlabelled = `is not labelled scheduling.schedops.io/extender-tls=true: a Secret is used by an extender only when it says so, with that label and "p" in its annotation scheduling.schedops.io/extender-tls-for`
		notForP    = `does not consent to p: its annotation scheduling.schedops.io/extender-tls-for does not list "p"; the Secret's owner adds it there to consent`
		notForS    = `does not consent to Scheduler/p: its annotation scheduling.schedops.io/extender-tls-for does not list "Scheduler/p"; the Secret's owner adds it there to consent`
	)
	tests := []struct {
		name   string
		secret *corev1.Secret
		proc   *plan.Process
		want   string
	}{
		{name: "the profile listed", secret: secret("true", ptr.To("p")), proc: profileP},
		{name: "the profile among others, with spaces", secret: secret("true", ptr.To("q , p ,r")), proc: profileP},
		{name: "everyone", secret: secret("true", ptr.To("*")), proc: profileP},
		{name: "everyone among names, with spaces", secret: secret("true", ptr.To("q, * ")), proc: profileP},
		{name: "the Scheduler listed", secret: secret("true", ptr.To("q,Scheduler/p")), proc: schedulerP},
		{name: "the Scheduler and everyone", secret: secret("true", ptr.To("*")), proc: schedulerP},
		{name: "listed but not labelled", secret: secret("", ptr.To("p")), proc: profileP, want: unlabelled},
		{name: "listed but labelled false", secret: secret("false", ptr.To("p")), proc: profileP, want: unlabelled},
		{name: "labelled without the annotation", secret: secret("true", nil), proc: profileP, want: notForP},
		{name: "an empty annotation", secret: secret("true", ptr.To("")), proc: profileP, want: notForP},
		{name: "only commas and spaces", secret: secret("true", ptr.To(" , ,")), proc: profileP, want: notForP},
		{name: "another profile", secret: secret("true", ptr.To("q")), proc: profileP, want: notForP},
		{name: "a name the user's starts with", secret: secret("true", ptr.To("pp,p-1")), proc: profileP, want: notForP},
		{name: "the Scheduler of the same name is not the profile", secret: secret("true", ptr.To("Scheduler/p")), proc: profileP, want: notForP},
		{name: "the profile of the same name is not the Scheduler", secret: secret("true", ptr.To("p")), proc: schedulerP, want: notForS},
		{name: "the kind is spelt as in the API", secret: secret("true", ptr.To("scheduler/p")), proc: schedulerP, want: notForS},
		{name: "a pattern is no wildcard", secret: secret("true", ptr.To("p*,Scheduler/*")), proc: schedulerP, want: notForS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := plan.SecretConsent(tc.secret, tc.proc.SecretUser()); got != tc.want {
				t.Errorf("plan.SecretConsent = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestExtenderSecretsHash: the hash follows the keys the scheduler reads, and only those.
func TestExtenderSecretsHash(t *testing.T) {
	hashOf := func(data map[string][]byte) string {
		t.Helper()
		r := fakeObjects(tlsSecret("a", data))
		p := withTLSExtenders("p", "a")
		// HTTPS needs a CA or insecure, and insecure goes without one.
		p.Spec.Extenders[0].TLSConfig.Insecure = ptr.To(len(data["ca.crt"]) == 0)
		proc := dedicated(p)
		if refusal, err := r.ReadExtenderSecrets(t.Context(), proc); err != nil || refusal.Refused() {
			t.Fatalf("reading the Secret: %v %s", err, refusal.Message)
		}
		return proc.Secrets.Hash
	}
	base := hashOf(testutil.PairData(cert1, key1))
	for name, data := range map[string]map[string][]byte{
		"new pair": testutil.PairData(cert2, key2),
		"CA added": testutil.PairData(cert1, key1, "ca.crt", string(cert2)),
	} {
		if hashOf(data) == base {
			t.Errorf("%s: the hash stayed %s", name, base)
		}
	}
	if got := hashOf(testutil.PairData(cert1, key1, "note", "x")); got != base {
		t.Errorf("a key the scheduler does not read changed the hash: %s, want %s", got, base)
	}
}

// TestInlineKeyIsRefusedBeforeAMissingSecret: a profile or Scheduler stored with an inline key
// (before the CRD refused it) that also names a missing Secret reports the key, for both kinds:
// creating the Secret would not make it valid.
func TestInlineKeyIsRefusedBeforeAMissingSecret(t *testing.T) {
	extender := schedulingv1alpha1.Extender{URLPrefix: "https://a", Weight: ptr.To[int64](1), PrioritizeVerb: ptr.To("prioritize"),
		TLSConfig: &schedulingv1alpha1.ExtenderTLSConfig{KeyData: []byte("key"), SecretRef: schedulingv1alpha1.ExtenderSecretReference{Name: "missing"}}}
	const want = "keyData is not accepted"

	p := testutil.MakeProfile("inline-key").Obj()
	p.Spec.Extenders = []schedulingv1alpha1.Extender{extender}
	pr := &SchedulerProfileReconciler{processObjects: fakeObjects(p)}
	obs, err := pr.reconcile(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(obs.invalid, want) || obs.secret.Refused() {
		t.Errorf("profile: invalid %q, secret missing %q; want the key refused and no Secret reported", obs.invalid, obs.secret.Message)
	}

	s := testutil.MakeScheduler("inline-key").Extender(extender).Obj()
	sr := &SchedulerReconciler{processObjects: fakeObjects(s)}
	sobs, err := sr.reconcile(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sobs.invalid, want) || sobs.secret.Refused() {
		t.Errorf("Scheduler: invalid %q, secret missing %q; want the key refused and no Secret reported", sobs.invalid, sobs.secret.Message)
	}
}
