package controllers

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
	proc.secrets.hash = "0123456789"
	d := typed[appsv1.Deployment](t, buildDeployment(proc, testSettings, testConfig(t, p)))
	spec := d.Spec.Template.Spec

	wantVolumes := []corev1.Volume{
		{Name: "extender-tls-0", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "a-client"}}},
		{Name: "extender-tls-1", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "b-client"}}},
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
	if got := d.Spec.Template.Annotations[AnnotationExtenderSecretsHash]; got != "0123456789" {
		t.Errorf("annotation %s = %q, want the Secrets' hash", AnnotationExtenderSecretsHash, got)
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
		proc.secrets.hash = hash
		return typed[appsv1.Deployment](t, buildDeployment(proc, testSettings, cfg))
	}
	before, after := build("aaaaaaaaaa"), build("bbbbbbbbbb")
	if before.Spec.Template.Annotations[AnnotationRevision] == after.Spec.Template.Annotations[AnnotationRevision] {
		t.Error("a rotated Secret kept the pod template revision; the scheduler would not restart")
	}
	if before.Spec.Template.Annotations[AnnotationConfigHash] != after.Spec.Template.Annotations[AnnotationConfigHash] ||
		before.Spec.Template.Spec.Volumes[0].ConfigMap.Name != after.Spec.Template.Spec.Volumes[0].ConfigMap.Name {
		t.Error("a rotated Secret changed the configuration or its ConfigMap")
	}

	plain := testutil.MakeProfile("plain").Obj()
	d := typed[appsv1.Deployment](t, buildDeployment(dedicated(plain), testSettings, testConfig(t, plain)))
	if _, ok := d.Spec.Template.Annotations[AnnotationExtenderSecretsHash]; ok || len(d.Spec.Template.Spec.Volumes) != 2 {
		t.Errorf("a profile without extender Secrets has annotations %v and %d volumes, want no Secret hash and 2 volumes",
			d.Spec.Template.Annotations, len(d.Spec.Template.Spec.Volumes))
	}
}

// tlsSecret is a Secret of the operator's namespace with data.
func tlsSecret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testSettings.namespace, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestReadExtenderSecrets(t *testing.T) {
	full := map[string]string{"tls.crt": "cert", "tls.key": "key"}
	tests := []struct {
		name        string
		secrets     []*corev1.Secret
		wantMissing string
		wantCA      []string
	}{
		{name: "both Secrets with their keys", secrets: []*corev1.Secret{tlsSecret("a", full), tlsSecret("b", map[string]string{"tls.crt": "cert", "tls.key": "key", "ca.crt": "ca"})}, wantCA: []string{"b"}},
		{name: "a Secret is missing", secrets: []*corev1.Secret{tlsSecret("a", full)},
			wantMissing: `Secret ops/b, named in an extender's tlsConfig.secretRef, does not exist`},
		{name: "a Secret has no key", secrets: []*corev1.Secret{tlsSecret("a", full), tlsSecret("b", map[string]string{"tls.crt": "cert"})},
			wantMissing: `Secret ops/b, named in an extender's tlsConfig.secretRef, has no key "tls.key"`},
		{name: "a Secret in another namespace does not count", secrets: []*corev1.Secret{tlsSecret("a", full), {ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b"}, Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}}},
			wantMissing: `Secret ops/b, named in an extender's tlsConfig.secretRef, does not exist`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var objs []client.Object
			for _, s := range tc.secrets {
				objs = append(objs, s)
			}
			r := fakeObjects(objs...)
			proc := dedicated(withTLSExtenders("p", "a", "b"))
			missing, err := r.readExtenderSecrets(t.Context(), proc)
			if err != nil {
				t.Fatal(err)
			}
			if missing != tc.wantMissing {
				t.Errorf("missing = %q, want %q", missing, tc.wantMissing)
			}
			if tc.wantMissing == "" && (len(proc.secrets.hash) != 10 || !cmp.Equal(sets.List(proc.secrets.withCA), tc.wantCA)) {
				t.Errorf("hash %q and Secrets with a CA %v, want 10 characters and %v", proc.secrets.hash, sets.List(proc.secrets.withCA), tc.wantCA)
			}
		})
	}
}

// TestExtenderSecretsHash: the hash follows the keys the scheduler reads, and only those.
func TestExtenderSecretsHash(t *testing.T) {
	hashOf := func(data map[string]string) string {
		t.Helper()
		r := fakeObjects(tlsSecret("a", data))
		proc := dedicated(withTLSExtenders("p", "a"))
		if missing, err := r.readExtenderSecrets(t.Context(), proc); err != nil || missing != "" {
			t.Fatalf("reading the Secret: %v %s", err, missing)
		}
		return proc.secrets.hash
	}
	base := hashOf(map[string]string{"tls.crt": "cert-1", "tls.key": "key-1"})
	for name, data := range map[string]map[string]string{
		"new certificate": {"tls.crt": "cert-2", "tls.key": "key-1"},
		"new key":         {"tls.crt": "cert-1", "tls.key": "key-2"},
		"CA added":        {"tls.crt": "cert-1", "tls.key": "key-1", "ca.crt": "ca"},
		"bytes moved":     {"tls.crt": "cert-1k", "tls.key": "ey-1"},
	} {
		if hashOf(data) == base {
			t.Errorf("%s: the hash stayed %s", name, base)
		}
	}
	if got := hashOf(map[string]string{"tls.crt": "cert-1", "tls.key": "key-1", "note": "x"}); got != base {
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
	if !strings.Contains(obs.invalid, want) || obs.secretMissing != "" {
		t.Errorf("profile: invalid %q, secret missing %q; want the key refused and no Secret reported", obs.invalid, obs.secretMissing)
	}

	s := testutil.MakeScheduler("inline-key").Extender(extender).Obj()
	sr := &SchedulerReconciler{processObjects: fakeObjects(s)}
	sobs, err := sr.reconcile(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sobs.invalid, want) || sobs.secretMissing != "" {
		t.Errorf("Scheduler: invalid %q, secret missing %q; want the key refused and no Secret reported", sobs.invalid, sobs.secretMissing)
	}
}
