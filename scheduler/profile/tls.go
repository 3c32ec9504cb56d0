package profile

import (
	"crypto/x509"
	"path"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// ExtenderSecretsDir is where the scheduler's pods mount the Secrets that extenders' tlsConfig.secretRef
// name, each in a directory named after the Secret.
const ExtenderSecretsDir = "/etc/kubernetes/extenders"

// Keys of an extender's TLS Secret: those of a kubernetes.io/tls Secret, and the CA bundle that
// cert-manager and others add to it.
const (
	// SecretCertKey holds the client certificate; required.
	SecretCertKey = "tls.crt"
	// SecretKeyKey holds the client certificate's private key; required.
	SecretKeyKey = "tls.key"
	// SecretCAKey holds the CA bundle that signs the extender's certificate; optional.
	SecretCAKey = "ca.crt"
)

// keyDataRefused is the message for an inline private key.
const keyDataRefused = "keyData is not accepted: put the client certificate and key in a Secret in the operator's namespace and name it in tlsConfig.secretRef"

// InsecureWithCA is the message for insecure: true with a CA: client-go's TLS configuration
// refuses it ("specifying a root certificates file with the insecure flag is not allowed"), so
// the scheduler would not start.
const InsecureWithCA = "insecure: true and caData are exclusive: the scheduler's TLS client refuses a CA with insecure; remove one"

// unverifiedHTTPS is the message for an HTTPS extender without a CA.
const unverifiedHTTPS = "enableHTTPS without a CA does not verify the extender's certificate: set caData, or a secretRef whose Secret has ca.crt, or insecure: true to call it unverified"

// ExtenderSecretDir is the directory where the scheduler's pods mount the named Secret.
func ExtenderSecretDir(secret string) string {
	return path.Join(ExtenderSecretsDir, secret)
}

// ExtenderSecrets returns the names of the Secrets that the extenders' tlsConfig.secretRef name,
// sorted and without duplicates.
func ExtenderSecrets(extenders []v1alpha1.Extender) []string {
	names := sets.New[string]()
	for _, e := range extenders {
		if e.TLSConfig != nil && e.TLSConfig.SecretRef.Name != "" {
			names.Insert(e.TLSConfig.SecretRef.Name)
		}
	}
	return sets.List(names)
}

// ValidateExtenders refuses the TLS settings that the CRD also refuses, for objects stored before
// it did: an inline private key (keyData), certData with secretRef (the Secret's tls.crt is
// the certificate), and insecure with caData (client-go refuses a CA with insecure). Extenders are at path (spec.extenders of a profile or a Scheduler).
func ValidateExtenders(extenders []v1alpha1.Extender, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range extenders {
		t := e.TLSConfig
		tlsPath := path.Index(i).Child("tlsConfig")
		if ptr.Deref(e.EnableHTTPS, false) && (t == nil || (t.SecretRef.Name == "" && len(t.CAData) == 0 && !ptr.Deref(t.Insecure, false))) {
			// kube-scheduler calls an HTTPS extender without a CA unverified, without a word:
			// that must be asked for. A Secret's ca.crt is checked when the Secret is read.
			errs = append(errs, field.Required(tlsPath.Child("caData"), unverifiedHTTPS))
		}
		if t == nil {
			continue
		}
		if ptr.Deref(t.Insecure, false) && len(t.CAData) > 0 {
			errs = append(errs, field.Forbidden(tlsPath.Child("insecure"), InsecureWithCA))
		}
		if len(t.CAData) > 0 && !x509.NewCertPool().AppendCertsFromPEM(t.CAData) {
			errs = append(errs, field.Invalid(tlsPath.Child("caData"), field.OmitValueType{}, "holds no PEM certificate"))
		}
		if len(t.KeyData) > 0 {
			errs = append(errs, field.Forbidden(tlsPath.Child("keyData"), keyDataRefused))
		}
		if len(t.CertData) > 0 && t.SecretRef.Name != "" {
			errs = append(errs, field.Forbidden(tlsPath.Child("certData"), "certData and secretRef are exclusive: with secretRef the client certificate is the Secret's tls.crt"))
		}
	}
	return errs
}

// convertTLSConfig renders an extender's TLS settings. The client certificate and key are the
// files of the mounted Secret, and so is the CA bundle when the Secret has one (caSecrets names
// those that do); a private key is never written into the configuration.
func convertTLSConfig(in *v1alpha1.ExtenderTLSConfig, caSecrets sets.Set[string]) *configv1.ExtenderTLSConfig {
	out := &configv1.ExtenderTLSConfig{
		Insecure:   ptr.Deref(in.Insecure, false),
		ServerName: ptr.Deref(in.ServerName, ""),
		CertData:   in.CertData,
		CAData:     in.CAData,
	}
	if ref := in.SecretRef; ref.Name != "" {
		dir := ExtenderSecretDir(ref.Name)
		out.CertFile = path.Join(dir, SecretCertKey)
		out.KeyFile = path.Join(dir, SecretKeyKey)
		if caSecrets.Has(ref.Name) {
			out.CAFile = path.Join(dir, SecretCAKey)
		}
	}
	return out
}
