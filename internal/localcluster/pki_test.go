package localcluster

import (
	"crypto/x509"
	"slices"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// TestWritePKI checks that the files given to the components chain to the right CA with the usages,
// names and identities that the apiserver and RBAC check.
func TestWritePKI(t *testing.T) {
	s := setup{Options: Options{WorkDir: t.TempDir(), Ports: Ports{APIServer: 6443}}}
	if err := writePKI(s); err != nil {
		t.Fatal(err)
	}
	ca := readCert(t, s.pki("ca.crt"))
	frontProxyCA := readCert(t, s.pki("front-proxy-ca.crt"))

	serving := readCert(t, s.pki("serving.crt"))
	verify(t, "serving", serving, ca, x509.ExtKeyUsageServerAuth)
	for _, host := range []string{"127.0.0.1", serviceIP, "localhost", "kubernetes.default.svc"} {
		if err := serving.VerifyHostname(host); err != nil {
			t.Errorf("serving certificate: %v", err)
		}
	}
	frontProxy := readCert(t, s.pki("front-proxy.crt"))
	verify(t, "front-proxy", frontProxy, frontProxyCA, x509.ExtKeyUsageClientAuth)
	if frontProxy.Subject.CommonName != frontProxyClientName {
		t.Errorf("front-proxy client is %q, want %q (--requestheader-allowed-names)", frontProxy.Subject.CommonName, frontProxyClientName)
	}
	if _, err := verifyWith(frontProxy, ca, x509.ExtKeyUsageClientAuth); err == nil {
		t.Error("the front-proxy client certificate verifies against the cluster CA; it must only be trusted as a front proxy")
	}
	// --service-account-key-file reads the public key from the private key file.
	if _, err := keyutil.PublicKeysFromFile(s.pki("sa.key")); err != nil {
		t.Errorf("service-account key: %v", err)
	}

	for _, tc := range []struct {
		kubeconfig string
		user       string
		groups     []string
	}{
		{s.adminKubeconfig(), "localcluster-admin", []string{"system:masters"}},
		{s.kubeconfig(ControllerManager), "system:kube-controller-manager", nil},
		{s.kubeconfig(Scheduler), "system:kube-scheduler", nil},
		{s.kubeconfig(Kwok), "kwok-controller", []string{"system:masters"}},
	} {
		t.Run(tc.user, func(t *testing.T) {
			cfg, err := clientcmd.BuildConfigFromFlags("", tc.kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != "https://127.0.0.1:6443" {
				t.Errorf("server %q, want https://127.0.0.1:6443", cfg.Host)
			}
			certs, err := certutil.ParseCertsPEM(cfg.CertData)
			if err != nil {
				t.Fatal(err)
			}
			verify(t, tc.user, certs[0], ca, x509.ExtKeyUsageClientAuth)
			if got := certs[0].Subject; got.CommonName != tc.user || !slices.Equal(got.Organization, tc.groups) {
				t.Errorf("subject %v, want user %q in groups %v", got, tc.user, tc.groups)
			}
		})
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	certs, err := certutil.CertsFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

func verify(t *testing.T, name string, cert, ca *x509.Certificate, usage x509.ExtKeyUsage) {
	t.Helper()
	if _, err := verifyWith(cert, ca, usage); err != nil {
		t.Errorf("%s certificate: %v", name, err)
	}
}

func verifyWith(cert, ca *x509.Certificate, usage x509.ExtKeyUsage) ([][]*x509.Certificate, error) {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	return cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}})
}
