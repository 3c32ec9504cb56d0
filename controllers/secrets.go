package controllers

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// secretKeys are the keys of an extender's Secret that the scheduler reads, in hash order.
var secretKeys = []string{profile.SecretCertKey, profile.SecretKeyKey, profile.SecretCAKey}

// secretRefusal is why the Secrets of a process's extenders keep it from rolling out: reason
// SecretNotFound (a Secret or a required key is missing) or SecretInvalid (the Secret does not
// consent to this use, its pair or CA does not parse, or an HTTPS extender would have no CA).
type secretRefusal struct {
	reason  string
	message string
}

// refused says whether nothing may be rolled out.
func (s secretRefusal) refused() bool { return s.message != "" }

// until ends "nothing is rolled out until ..." in the status.
func (s secretRefusal) until() string {
	if s.reason == schedulingv1alpha1.ReasonSecretNotFound {
		return "it exists"
	}
	return "it is fixed"
}

// what the Secret is, for a condition that points at another.
func (s secretRefusal) what() string {
	if s.reason == schedulingv1alpha1.ReasonSecretNotFound {
		return "missing"
	}
	return "not usable"
}

func secretNotFound(format string, args ...any) secretRefusal {
	return secretRefusal{reason: schedulingv1alpha1.ReasonSecretNotFound, message: fmt.Sprintf(format, args...)}
}

func secretInvalid(format string, args ...any) secretRefusal {
	return secretRefusal{reason: schedulingv1alpha1.ReasonSecretInvalid, message: fmt.Sprintf(format, args...)}
}

// ReadExtenderSecrets reads the Secrets that the process's extenders name into proc.secrets. It
// returns, for the status, why they cannot be used: then nothing may be rolled out, since the
// scheduler would not start or every extender call would fail its handshake, and a running
// scheduler keeps its configuration. A Secret is used only when it consents to the process
// (secretConsent), and its pair and CA are parsed as the scheduler's client parses them.
func (r *processObjects) ReadExtenderSecrets(ctx context.Context, proc *plan.Process) (secretRefusal, error) {
	proc.Secrets = plan.ExtenderSecrets{}
	names := profile.ExtenderSecrets(proc.Extenders)
	if len(names) == 0 {
		return secretRefusal{}, nil
	}
	proc.Secrets.WithCA = sets.New[string]()
	h := sha256.New()
	for _, name := range names {
		key := client.ObjectKey{Namespace: r.Settings.Namespace, Name: name}
		secret := &corev1.Secret{}
		if err := r.client.Get(ctx, key, secret); err != nil {
			if apierrors.IsNotFound(err) {
				return secretNotFound("Secret %s, named in an extender's tlsConfig.secretRef, does not exist", key), nil
			}
			return secretRefusal{}, fmt.Errorf("reading Secret %s: %w", key, err)
		}
		if refusal := checkExtenderSecret(key, secret, proc.SecretUser()); refusal.refused() {
			return refusal, nil
		}
		if len(secret.Data[profile.SecretCAKey]) > 0 {
			proc.Secrets.WithCA.Insert(name)
		}
		// Lengths before contents keep one Secret's bytes from reading as another's.
		for _, k := range secretKeys {
			_, _ = fmt.Fprintf(h, "%s/%s:%d:", name, k, len(secret.Data[k]))
			_, _ = h.Write(secret.Data[k])
		}
	}
	if _, refusal := unverifiedHTTPS(proc.Extenders, proc.Secrets.WithCA, r.Settings.Namespace); refusal.refused() {
		return refusal, nil
	}
	proc.Secrets.Hash = hex.EncodeToString(h.Sum(nil))[:profile.HashLength]
	return secretRefusal{}, nil
}

// checkExtenderSecret refuses a Secret that does not consent to user, a name of secretUser
// (another team's client certificate, the webhook's serving certificate), or whose certificate
// and key the scheduler's TLS client would not load: tls.X509KeyPair and the CA pool of
// client-go, so that a mismatched pair is refused before rollout instead of failing every
// handshake after. The admission webhook and the reconcilers both call it.
func checkExtenderSecret(key client.ObjectKey, secret *corev1.Secret, user string) secretRefusal {
	const named = "named in an extender's tlsConfig.secretRef"
	if why := secretConsent(secret, user); why != "" {
		return secretInvalid("Secret %s, %s, %s", key, named, why)
	}
	for _, k := range []string{profile.SecretCertKey, profile.SecretKeyKey} {
		if len(secret.Data[k]) == 0 {
			return secretNotFound("Secret %s, %s, has no key %q", key, named, k)
		}
	}
	if _, err := tls.X509KeyPair(secret.Data[profile.SecretCertKey], secret.Data[profile.SecretKeyKey]); err != nil {
		return secretInvalid("Secret %s, %s: %s and %s are not a certificate and its key: %v", key, named, profile.SecretCertKey, profile.SecretKeyKey, err)
	}
	if ca := secret.Data[profile.SecretCAKey]; len(ca) > 0 && !x509.NewCertPool().AppendCertsFromPEM(ca) {
		return secretInvalid("Secret %s, %s: %s holds no PEM certificate", key, named, profile.SecretCAKey)
	}
	return secretRefusal{}
}

// secretConsent is the one rule of a Secret's consent to be mounted into a scheduler, for the
// admission webhook, every rollout and every rollback: the Secret is labelled
// schedulingv1alpha1.LabelExtenderTLS=true and its schedulingv1alpha1.AnnotationExtenderTLSFor lists user, the name of the process
// that mounts it (secretUser), or "*". It returns "" when the Secret consents, else why not, to
// follow the Secret's name in a message, with what its owner adds to consent.
func secretConsent(secret *corev1.Secret, user string) string {
	if secret.Labels[schedulingv1alpha1.LabelExtenderTLS] != "true" {
		return fmt.Sprintf("is not labelled %s=true: a Secret is used by an extender only when it says so, with that label and %q in its annotation %s",
			schedulingv1alpha1.LabelExtenderTLS, user, schedulingv1alpha1.AnnotationExtenderTLSFor)
	}
	for name := range strings.SplitSeq(secret.Annotations[schedulingv1alpha1.AnnotationExtenderTLSFor], ",") {
		if name = strings.TrimSpace(name); name == user || name == "*" {
			return ""
		}
	}
	return fmt.Sprintf("does not consent to %s: its annotation %s does not list %q; the Secret's owner adds it there to consent",
		user, schedulingv1alpha1.AnnotationExtenderTLSFor, user)
}

// unverifiedHTTPS refuses, with its index (-1 for none), an extender with insecure whose Secret
// has a ca.crt, and an HTTPS extender whose Secret has no ca.crt and that sets no caData nor
// insecure: kube-scheduler calls an HTTPS extender without a CA unverified, silently, so the
// operator asks for insecure: true to say that this is meant. Extenders without a Secret are
// checked by profile.ValidateExtenders, with their field.
func unverifiedHTTPS(extenders []schedulingv1alpha1.Extender, withCA sets.Set[string], namespace string) (int, secretRefusal) {
	for i, e := range extenders {
		t := e.TLSConfig
		if t != nil && ptr.Deref(t.Insecure, false) && withCA.Has(t.SecretRef.Name) {
			// client-go refuses a CA with insecure: the scheduler would not start.
			return i, secretInvalid("Secret %s/%s, named in spec.extenders[%d].tlsConfig.secretRef, has %s and the extender sets insecure: true: the scheduler's TLS client refuses a CA with insecure; remove insecure, or %s from the Secret",
				namespace, t.SecretRef.Name, i, profile.SecretCAKey, profile.SecretCAKey)
		}
		if !ptr.Deref(e.EnableHTTPS, false) || t == nil || t.SecretRef.Name == "" || ptr.Deref(t.Insecure, false) || len(t.CAData) > 0 || withCA.Has(t.SecretRef.Name) {
			continue
		}
		return i, secretInvalid("Secret %s/%s, named in spec.extenders[%d].tlsConfig.secretRef, has no %s and the extender sets no caData: over HTTPS the extender's certificate would not be verified; add a CA, or set tlsConfig.insecure: true to call it unverified",
			namespace, t.SecretRef.Name, i, profile.SecretCAKey)
	}
	return -1, secretRefusal{}
}

// extenderSecretVolumes mount each Secret that the process's extenders name, read-only, at
// profile.ExtenderSecretDir(name), where the rendered configuration looks for its files.
func extenderSecretVolumes(proc *plan.Process) ([]*corev1ac.VolumeApplyConfiguration, []*corev1ac.VolumeMountApplyConfiguration) {
	var volumes []*corev1ac.VolumeApplyConfiguration
	var mounts []*corev1ac.VolumeMountApplyConfiguration
	for i, name := range profile.ExtenderSecrets(proc.Extenders) {
		// Secret names may be longer than a volume name can be.
		volume := fmt.Sprintf("extender-tls-%d", i)
		// Only the keys the scheduler reads are mounted: a ca.key or anything else in the Secret
		// stays out of the pods.
		items := []*corev1ac.KeyToPathApplyConfiguration{
			corev1ac.KeyToPath().WithKey(profile.SecretCertKey).WithPath(profile.SecretCertKey),
			corev1ac.KeyToPath().WithKey(profile.SecretKeyKey).WithPath(profile.SecretKeyKey),
		}
		if proc.Secrets.WithCA.Has(name) {
			items = append(items, corev1ac.KeyToPath().WithKey(profile.SecretCAKey).WithPath(profile.SecretCAKey))
		}
		volumes = append(volumes, corev1ac.Volume().WithName(volume).WithSecret(corev1ac.SecretVolumeSource().WithSecretName(name).WithItems(items...)))
		mounts = append(mounts, corev1ac.VolumeMount().WithName(volume).WithMountPath(profile.ExtenderSecretDir(name)).WithReadOnly(true))
	}
	return volumes, mounts
}

// profilesNamingSecret enqueues the profiles whose scheduler calls an extender with the Secret:
// a profile's own extenders, or those of its Scheduler. A Secret that appears lets them roll out;
// a changed one rolls their scheduler.
func (r *SchedulerProfileReconciler) profilesNamingSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	if obj.GetNamespace() != r.Settings.Namespace {
		return nil
	}
	schedulers := sets.New[string]()
	for _, req := range r.schedulerRequests(ctx, obj.GetName()) {
		schedulers.Insert(req.Name)
	}
	return r.profileRequests(ctx, func(p *schedulingv1alpha1.SchedulerProfile) bool {
		if ref := p.Spec.SchedulerRef.Name; ref != "" {
			return schedulers.Has(ref)
		}
		return slices.Contains(profile.ExtenderSecrets(p.Spec.Extenders), obj.GetName())
	})
}

// schedulersNamingSecret enqueues the Schedulers with an extender that uses the Secret.
func (r *SchedulerReconciler) schedulersNamingSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	if obj.GetNamespace() != r.Settings.Namespace {
		return nil
	}
	return r.schedulerRequests(ctx, obj.GetName())
}

// schedulerRequests are the Schedulers with an extender that uses the named Secret.
func (r *processObjects) schedulerRequests(ctx context.Context, secret string) []reconcile.Request {
	var list schedulingv1alpha1.SchedulerList
	if err := r.client.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "Listing Schedulers")
		return nil
	}
	var reqs []reconcile.Request
	for _, s := range list.Items {
		if slices.Contains(profile.ExtenderSecrets(s.Spec.Extenders), secret) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: s.Name}})
		}
	}
	return reqs
}
