package testutil

import (
	"os"
	"path/filepath"

	certutil "k8s.io/client-go/util/cert"
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
