package testutil

import (
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// LocalServingCert writes a self-signed certificate for localhost and its key into dir as
// tls.crt and tls.key, the files a webhook server reads from its certificate directory, and
// returns the certificate: the caBundle of a webhook configuration that calls it.
func LocalServingCert(dir string) ([]byte, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", nil, nil)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return certPEM, nil
}

// KeyPair returns a self-signed certificate for cn and its key, PEM-encoded: a client
// certificate that tls.X509KeyPair loads, and a CA bundle that verifies it.
func KeyPair(cn string) (certPEM, keyPEM []byte) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(cn, nil, nil)
	if err != nil {
		panic(err) // only a broken random source fails
	}
	return certPEM, keyPEM
}

// ExtenderTLSSecret is a Secret of namespace ns that holds an extender's client certificate
// (data), labelled for that use and consenting to it by users (AnnotationExtenderTLSFor).
func ExtenderTLSSecret(ns, name, users string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels:      map[string]string{schedulingv1alpha1.LabelExtenderTLS: "true"},
		Annotations: map[string]string{schedulingv1alpha1.AnnotationExtenderTLSFor: users}}, Data: data}
}

// PairData is the data of a Secret with the client pair cert and key, and more keys and values.
func PairData(cert, key []byte, more ...string) map[string][]byte {
	data := map[string][]byte{"tls.crt": cert, "tls.key": key}
	for i := 0; i+1 < len(more); i += 2 {
		data[more[i]] = []byte(more[i+1])
	}
	return data
}
