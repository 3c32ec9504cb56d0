package plan

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// secretKeys are the keys of an extender's Secret that the scheduler reads, in hash order.
var secretKeys = []string{profile.SecretCertKey, profile.SecretKeyKey, profile.SecretCAKey}

// SecretRefusal is why the Secrets of a process's extenders keep it from rolling out: reason
// SecretNotFound (a Secret or a required key is missing) or SecretInvalid (the Secret does not
// consent to this use, its pair or CA does not parse, or an HTTPS extender would have no CA).
type SecretRefusal struct {
	Reason  string
	Message string
}

// Refused says whether nothing may be rolled out.
func (s SecretRefusal) Refused() bool { return s.Message != "" }

// Until ends "nothing is rolled out until ..." in the status.
func (s SecretRefusal) Until() string {
	if s.Reason == schedulingv1alpha1.ReasonSecretNotFound {
		return "it exists"
	}
	return "it is fixed"
}

// What the Secret is, for a condition that points at another.
func (s SecretRefusal) What() string {
	if s.Reason == schedulingv1alpha1.ReasonSecretNotFound {
		return "missing"
	}
	return "not usable"
}

func secretNotFound(format string, args ...any) SecretRefusal {
	return SecretRefusal{Reason: schedulingv1alpha1.ReasonSecretNotFound, Message: fmt.Sprintf(format, args...)}
}

func secretInvalid(format string, args ...any) SecretRefusal {
	return SecretRefusal{Reason: schedulingv1alpha1.ReasonSecretInvalid, Message: fmt.Sprintf(format, args...)}
}

// ReadExtenderSecrets reads the Secrets that the process's extenders name into proc.Secrets. It
// returns, for the status, why they cannot be used: then nothing may be rolled out, since the
// scheduler would not start or every extender call would fail its handshake, and a running
// scheduler keeps its configuration. A Secret is used only when it consents to the process
// (SecretConsent), and its pair and CA are parsed as the scheduler's client parses them.
func (r *Planner) ReadExtenderSecrets(ctx context.Context, proc *Process) (SecretRefusal, error) {
	proc.Secrets = ExtenderSecrets{}
	names := profile.ExtenderSecrets(proc.Extenders)
	if len(names) == 0 {
		return SecretRefusal{}, nil
	}
	proc.Secrets.WithCA = sets.New[string]()
	h := sha256.New()
	for _, name := range names {
		key := client.ObjectKey{Namespace: r.Settings.Namespace, Name: name}
		secret := &corev1.Secret{}
		if err := r.Reader.Get(ctx, key, secret); err != nil {
			if apierrors.IsNotFound(err) {
				return secretNotFound("Secret %s, named in an extender's tlsConfig.secretRef, does not exist", key), nil
			}
			return SecretRefusal{}, fmt.Errorf("reading Secret %s: %w", key, err)
		}
		if refusal := CheckExtenderSecret(key, secret, proc.SecretUser()); refusal.Refused() {
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
	if _, refusal := UnverifiedHTTPS(proc.Extenders, proc.Secrets.WithCA, r.Settings.Namespace); refusal.Refused() {
		return refusal, nil
	}
	proc.Secrets.Hash = hex.EncodeToString(h.Sum(nil))[:profile.HashLength]
	return SecretRefusal{}, nil
}

// CheckExtenderSecret refuses a Secret that does not consent to user, a name of secretUser
// (another team's client certificate, the webhook's serving certificate), or whose certificate
// and key the scheduler's TLS client would not load: tls.X509KeyPair and the CA pool of
// client-go, so that a mismatched pair is refused before rollout instead of failing every
// handshake after. The admission webhook and the reconcilers both call it.
func CheckExtenderSecret(key client.ObjectKey, secret *corev1.Secret, user string) SecretRefusal {
	const named = "named in an extender's tlsConfig.secretRef"
	if why := SecretConsent(secret, user); why != "" {
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
	return SecretRefusal{}
}

// SecretConsent is the one rule of a Secret's consent to be mounted into a scheduler, for the
// admission webhook, every rollout and every rollback: the Secret is labelled
// schedulingv1alpha1.LabelExtenderTLS=true and its schedulingv1alpha1.AnnotationExtenderTLSFor lists user, the name of the process
// that mounts it (secretUser), or "*". It returns "" when the Secret consents, else why not, to
// follow the Secret's name in a message, with what its owner adds to consent.
func SecretConsent(secret *corev1.Secret, user string) string {
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

// UnverifiedHTTPS refuses, with its index (-1 for none), an extender with insecure whose Secret
// has a ca.crt, and an HTTPS extender whose Secret has no ca.crt and that sets no caData nor
// insecure: kube-scheduler calls an HTTPS extender without a CA unverified, silently, so the
// operator asks for insecure: true to say that this is meant. Extenders without a Secret are
// checked by profile.ValidateExtenders, with their field.
func UnverifiedHTTPS(extenders []schedulingv1alpha1.Extender, withCA sets.Set[string], namespace string) (int, SecretRefusal) {
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
	return -1, SecretRefusal{}
}
