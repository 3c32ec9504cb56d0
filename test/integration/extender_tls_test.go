package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// Client key pairs of the tests: the operator loads them as the scheduler does
// (tls.X509KeyPair), and no rendered configuration may contain a key.
var (
	testCert1, testKey1 = testutil.KeyPair("client-1")
	testCert2, testKey2 = testutil.KeyPair("client-2")
)

var (
	secretNotFound = conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonSecretNotFound}
	secretInvalid  = conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonSecretInvalid}
)

// extenderSecret is a Secret of the operator's namespace with data that consents to extender
// use by users: the value of its annotation schedulingv1alpha1.AnnotationExtenderTLSFor.
func extenderSecret(name, users string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: name,
			Labels:      map[string]string{schedulingv1alpha1.LabelExtenderTLS: "true"},
			Annotations: map[string]string{schedulingv1alpha1.AnnotationExtenderTLSFor: users}},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// pair is the data of an extender Secret: a certificate, its key and a CA bundle.
func pair(cert, key []byte) map[string][]byte {
	return map[string][]byte{"tls.crt": cert, "tls.key": key, "ca.crt": testCert2}
}

// tlsExtender is an HTTPS extender whose client certificate is in the named Secret.
func tlsExtender(secret string) schedulingv1alpha1.Extender {
	return schedulingv1alpha1.Extender{
		URLPrefix: "https://extender.example.com/scheduler", FilterVerb: ptr.To("filter"), EnableHTTPS: ptr.To(true),
		TLSConfig: &schedulingv1alpha1.ExtenderTLSConfig{SecretRef: schedulingv1alpha1.ExtenderSecretReference{Name: secret}},
	}
}

// TestControllerExtenderSecret: a profile whose extender names a Secret that does not exist (or
// lacks tls.key) is not rolled out, and says which Secret and key; once the Secret is complete the
// scheduler rolls out with the Secret's TLS keys mounted and no key in its ConfigMap; a new
// certificate rolls the pods and keeps the ConfigMap; a mismatched pair and a Secret without the
// consent label are refused (SecretInvalid) and, like a Secret deleted later, leave the running
// scheduler alone.
func TestControllerExtenderSecret(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("ctl-tls")
	secretName := name + "-client"
	p := testutil.MakeProfile(name).Obj()
	p.Spec.Extenders = []schedulingv1alpha1.Extender{tlsExtender(secretName)}
	k.createProfile(t, p)

	k.waitForConfigValidMessage(t, name, secretNotFound, fmt.Sprintf("Secret %s/%s, named in an extender's tlsConfig.secretRef, does not exist", operatorNamespace, secretName))
	if err := k.deploymentAbsent(t.Context(), name+"-scheduler"); err != nil {
		t.Error(err)
	}

	secret := extenderSecret(secretName, name, map[string][]byte{"tls.crt": testCert1})
	k.createSecret(t, secret)
	k.waitForConfigValidMessage(t, name, secretNotFound, `has no key "tls.key"`)
	if err := k.deploymentAbsent(t.Context(), name+"-scheduler"); err != nil {
		t.Error(err)
	}

	// The Secret is completed: the profile recovers without a change of its own.
	k.updateSecret(t, secret, pair(testCert1, testKey1))
	before := k.waitForRollout(t, name)
	objs := k.waitForOwned(t, before, before.Status.ConfigMapName)
	config := objs[objConfigMap].(*corev1.ConfigMap).Data["config.yaml"]
	for _, want := range []string{"certFile: /etc/kubernetes/extenders/" + secretName + "/tls.crt", "keyFile: /etc/kubernetes/extenders/" + secretName + "/tls.key", "caFile: /etc/kubernetes/extenders/" + secretName + "/ca.crt"} {
		if !strings.Contains(config, want) {
			t.Errorf("The configuration lacks %q:\n%s", want, config)
		}
	}
	if strings.Contains(config, "PRIVATE KEY") {
		t.Errorf("The ConfigMap holds a private key:\n%s", config)
	}
	d := objs[objDeployment].(*appsv1.Deployment)
	checkSecretMounted(t, d, secretName)
	k.markDeploymentAvailable(t, before.Status.DeploymentName)
	k.waitForConditions(t, name, configValid, available, rolledOut, notDegraded)

	// Rotation: a new certificate is a new pod template, with the same configuration.
	k.updateSecret(t, secret, pair(testCert2, testKey2))
	rotated := k.waitForRevision(t, before.Status.DeploymentName, func(rev string) bool {
		return rev != d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]
	})
	if got, was := rotated.Spec.Template.Annotations[schedulingv1alpha1.AnnotationExtenderSecretsHash], d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationExtenderSecretsHash]; got == was {
		t.Errorf("The Secrets' hash stayed %s after the rotation", got)
	}
	if got := rotated.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash]; got != before.Status.ConfigHash {
		t.Errorf("The rotation changed the config hash from %s to %s", before.Status.ConfigHash, got)
	}
	after, err := k.getProfile(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if after.Status.ConfigMapName != before.Status.ConfigMapName {
		t.Errorf("The rotation changed the ConfigMap from %s to %s", before.Status.ConfigMapName, after.Status.ConfigMapName)
	}
	k.markDeploymentAvailable(t, before.Status.DeploymentName)
	k.waitForConditions(t, name, configValid, available, rolledOut, notDegraded)

	// A certificate with another certificate's key, then a Secret that no longer consents:
	// refused before rollout, naming what is wrong; the running scheduler is not touched.
	k.updateSecret(t, secret, pair(testCert2, testKey1))
	k.waitForConfigValidMessage(t, name, secretInvalid, fmt.Sprintf("Secret %s/%s, named in an extender's tlsConfig.secretRef: tls.crt and tls.key are not a certificate and its key: tls: private key does not match public key; nothing is rolled out until it is fixed", operatorNamespace, secretName))
	k.waitForConditions(t, name, secretInvalid, available,
		conditionWant{schedulingv1alpha1.ConditionDegraded, metav1.ConditionTrue, schedulingv1alpha1.ReasonSecretInvalid})
	k.updateSecret(t, secret, pair(testCert2, testKey2))
	k.waitForConditions(t, name, configValid, available, notDegraded)
	if err := k.admin.Get(t.Context(), client.ObjectKeyFromObject(secret), secret); err != nil {
		t.Fatal(err)
	}
	secret.Labels = nil
	if err := k.admin.Update(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	k.waitForConfigValidMessage(t, name, secretInvalid, "is not labelled scheduling.schedops.io/extender-tls=true: a Secret is used by an extender only when it says so")
	if still := k.liveDeployment(t, before.Status.DeploymentName); still.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision] != rotated.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision] {
		t.Errorf("The Deployment changed while the Secret was refused")
	}

	// The Secret goes away: refused, and the running scheduler is not touched.
	if err := k.admin.Delete(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	k.waitForConfigValidMessage(t, name, secretNotFound, "does not exist")
	k.waitForConditions(t, name, secretNotFound, available,
		conditionWant{schedulingv1alpha1.ConditionDegraded, metav1.ConditionTrue, schedulingv1alpha1.ReasonSecretNotFound})
	still := k.liveDeployment(t, before.Status.DeploymentName)
	if still.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision] != rotated.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision] {
		t.Errorf("The Deployment changed while the Secret was missing")
	}
}

// TestSchedulerExtenderSecret: a Scheduler's extenders take their Secrets the same way. While the
// Secret is missing the Scheduler is Degraded and its member is not valid, both naming the
// Secret; a Secret that consents to the member but not to the Scheduler ("Scheduler/<name>"),
// which mounts it, is refused the same way; once it consents to the Scheduler, the shared
// scheduler runs with it mounted.
func TestSchedulerExtenderSecret(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("ctl-tls-shared")
	secretName := name + "-client"
	// Its Secret has no ca.crt: the extender says it calls unverified.
	extender := tlsExtender(secretName)
	extender.TLSConfig.Insecure = ptr.To(true)
	k.createScheduler(t, &schedulingv1alpha1.Scheduler{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       schedulingv1alpha1.SchedulerSpec{Extenders: []schedulingv1alpha1.Extender{extender}},
	})
	member := name + "-a"
	k.createProfile(t, testutil.MakeProfile(member).SchedulerRef(name).Obj())

	k.waitForConfigValidMessage(t, member, secretNotFound, secretName)
	k.waitForDegradedScheduler(t, name, schedulingv1alpha1.ReasonSecretNotFound, secretName)
	if err := k.deploymentAbsent(t.Context(), name+".scheduler"); err != nil {
		t.Error(err)
	}

	// A Secret that consents to the member, not to the Scheduler that mounts it, is refused.
	secret := extenderSecret(secretName, member, map[string][]byte{"tls.crt": testCert1, "tls.key": testKey1})
	k.createSecret(t, secret)
	k.waitForDegradedScheduler(t, name, schedulingv1alpha1.ReasonSecretInvalid,
		fmt.Sprintf(`does not consent to Scheduler/%s: its annotation %s does not list "Scheduler/%s"`, name, schedulingv1alpha1.AnnotationExtenderTLSFor, name))
	k.waitForConfigValidMessage(t, member, secretInvalid, "Scheduler/"+name)
	if err := k.deploymentAbsent(t.Context(), name+".scheduler"); err != nil {
		t.Error(err)
	}

	k.annotateSecret(t, secret, "Scheduler/"+name)
	k.waitForConditions(t, member, configValid)
	s := k.waitForScheduler(t, name, "to run its member", func(s *schedulingv1alpha1.Scheduler) error {
		if s.Status.ConfigMapName == "" {
			return fmt.Errorf("no configuration rolled out")
		}
		return nil
	})
	checkSecretMounted(t, k.schedulerDeployment(t, s), secretName)
	cm := &corev1.ConfigMap{}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: s.Status.ConfigMapName}, cm); err != nil {
		t.Fatal(err)
	}
	if config := cm.Data["config.yaml"]; strings.Contains(config, "PRIVATE KEY") || strings.Contains(config, "caFile") ||
		!strings.Contains(config, "keyFile: /etc/kubernetes/extenders/"+secretName+"/tls.key") {
		t.Errorf("The shared configuration should point keyFile at the mount, with no caFile (the Secret has no ca.crt) and no key:\n%s", config)
	}
}

// waitForConfigValidMessage waits until the profile's ConfigValid condition is want and its
// message contains text.
func (k *cluster) waitForConfigValidMessage(t *testing.T, name string, want conditionWant, text string) {
	t.Helper()
	testutil.Eventually(t, reconcileTimeout, fmt.Sprintf("SchedulerProfile %s to have %v saying %q", name, want, text), func(ctx context.Context) error {
		p, err := k.getProfile(ctx, name)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, want.typ)
		if c == nil || c.Status != want.status || c.Reason != want.reason || !strings.Contains(c.Message, text) {
			return fmt.Errorf("conditions: %s", formatConditions(p))
		}
		return nil
	})
}

// updateSecret replaces the data of a Secret.
func (k *cluster) updateSecret(t *testing.T, secret *corev1.Secret, data map[string][]byte) {
	t.Helper()
	if err := k.admin.Get(t.Context(), client.ObjectKeyFromObject(secret), secret); err != nil {
		t.Fatal(err)
	}
	secret.Data = data
	if err := k.admin.Update(t.Context(), secret); err != nil {
		t.Fatalf("Updating Secret %s: %v", secret.Name, err)
	}
}

// checkSecretMounted checks that the scheduler's pod template mounts the Secret read-only where
// the configuration reads it, and carries the Secrets' hash.
func checkSecretMounted(t *testing.T, d *appsv1.Deployment, secret string) {
	t.Helper()
	spec := d.Spec.Template.Spec
	volume := ""
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secret {
			volume = v.Name
			var keys []string
			for _, item := range v.Secret.Items {
				keys = append(keys, item.Key)
			}
			// Only the TLS keys are mounted, never the whole Secret.
			if len(keys) < 2 || keys[0] != "tls.crt" || keys[1] != "tls.key" || (len(keys) == 3 && keys[2] != "ca.crt") || len(keys) > 3 {
				t.Errorf("Deployment %s mounts the keys %v of Secret %s, want tls.crt, tls.key and maybe ca.crt", d.Name, keys, secret)
			}
		}
	}
	mounted := false
	for _, m := range spec.Containers[0].VolumeMounts {
		mounted = mounted || (m.Name == volume && m.ReadOnly && m.MountPath == "/etc/kubernetes/extenders/"+secret)
	}
	if volume == "" || !mounted {
		t.Errorf("Deployment %s does not mount Secret %s read-only at /etc/kubernetes/extenders/%s: volumes %v, mounts %v",
			d.Name, secret, secret, spec.Volumes, spec.Containers[0].VolumeMounts)
	}
	if d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationExtenderSecretsHash] == "" {
		t.Errorf("Deployment %s has no %s annotation", d.Name, schedulingv1alpha1.AnnotationExtenderSecretsHash)
	}
}
