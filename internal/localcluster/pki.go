package localcluster

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"net"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeconfigutil "k8s.io/kubernetes/cmd/kubeadm/app/util/kubeconfig"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pkiutil"
)

// Certificates come from kubeadm's pkiutil, which builds on client-go's util/cert: client-go can make a
// self-signed CA but cannot sign a certificate with a given CA (its GenerateSelfSignedCertKey makes a
// throwaway RSA CA per call). k8s.io/kubernetes is a dependency already, and pkiutil adds 13 packages;
// k8s.io/kubernetes/test/utils.NewSignedCert would add about 500.

// keyAlgorithm is ECDSA P-256 because RSA key generation took seconds per key on a 2-core machine.
const keyAlgorithm = kubeadmapi.EncryptionAlgorithmECDSAP256

// serviceIP is the first address of serviceCIDR: the apiserver's "kubernetes" Service, which
// in-cluster clients reach the apiserver through, so the serving certificate names it.
const serviceIP = "10.96.0.1"

// KeyPair is a certificate and its private key: the local cluster's CAs and certificates, and
// those a test makes for a server of its own.
type KeyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// NewCA returns a new self-signed certificate authority named name.
func NewCA(name string) (KeyPair, error) {
	cert, key, err := pkiutil.NewCertificateAuthority(&pkiutil.CertConfig{
		Config:              certutil.Config{CommonName: name},
		EncryptionAlgorithm: keyAlgorithm,
	})
	if err != nil {
		return KeyPair{}, fmt.Errorf("localcluster: creating CA %s: %w", name, err)
	}
	return KeyPair{cert: cert, key: key}, nil
}

// Sign returns a new key and a certificate for it, signed by kp as a CA.
func (kp KeyPair) Sign(cfg certutil.Config) (KeyPair, error) {
	cert, key, err := pkiutil.NewCertAndKey(kp.cert, kp.key, &pkiutil.CertConfig{Config: cfg, EncryptionAlgorithm: keyAlgorithm})
	if err != nil {
		return KeyPair{}, fmt.Errorf("localcluster: signing certificate %s: %w", cfg.CommonName, err)
	}
	return KeyPair{cert: cert, key: key}, nil
}

// CertPEM is the certificate, PEM-encoded.
func (kp KeyPair) CertPEM() []byte {
	return pkiutil.EncodeCertPEM(kp.cert)
}

// KeyPEM is the private key, PEM-encoded.
func (kp KeyPair) KeyPEM() ([]byte, error) {
	return keyutil.MarshalPrivateKeyToPEM(kp.key)
}

func clientCert(user string, groups ...string) certutil.Config {
	return certutil.Config{CommonName: user, Organization: groups, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
}

// servingCertConfig is servingCert with the real node's bridge address, which the apiserver binds then.
func servingCertConfig(s setup) certutil.Config {
	cfg := servingCert
	cfg.AltNames.IPs = append([]net.IP(nil), servingCert.AltNames.IPs...)
	if s.gateway != "" {
		cfg.AltNames.IPs = append(cfg.AltNames.IPs, net.ParseIP(s.gateway))
	}
	return cfg
}

// servingCert is for kube-apiserver, kube-controller-manager and kube-scheduler, all on 127.0.0.1.
var servingCert = certutil.Config{
	CommonName: "localcluster-serving",
	AltNames: certutil.AltNames{
		IPs: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)},
		DNSNames: []string{
			"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local",
		},
	},
	Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
}

// writePKI writes the files the components are given to WorkDir/pki (see setup.pki for their names):
// the cluster CA and a serving certificate it signed, the front-proxy CA and client, and the
// service-account key; then a kubeconfig for each client of the apiserver.
func writePKI(s setup) error {
	ca, err := NewCA("localcluster-ca")
	if err != nil {
		return err
	}
	serving, err := ca.Sign(servingCertConfig(s))
	if err != nil {
		return err
	}
	frontProxyCA, err := NewCA("localcluster-front-proxy-ca")
	if err != nil {
		return err
	}
	frontProxy, err := frontProxyCA.Sign(clientCert(frontProxyClientName))
	if err != nil {
		return err
	}
	// The apiserver signs service-account tokens with this key and reads its public half from the same
	// file; the controller manager signs the legacy token Secrets with it.
	saKey, err := pkiutil.GeneratePrivateKey(keyAlgorithm)
	if err != nil {
		return fmt.Errorf("localcluster: generating the service-account key: %w", err)
	}
	dir := s.pki("")
	if err := errors.Join(
		pkiutil.WriteCert(dir, "ca", ca.cert),
		pkiutil.WriteCertAndKey(dir, "serving", serving.cert, serving.key),
		pkiutil.WriteCert(dir, "front-proxy-ca", frontProxyCA.cert),
		pkiutil.WriteCertAndKey(dir, "front-proxy", frontProxy.cert, frontProxy.key),
		pkiutil.WriteKey(dir, "sa", saKey),
	); err != nil {
		return fmt.Errorf("localcluster: writing certificates: %w", err)
	}
	if err := writeKubeletClient(s, ca); err != nil {
		return err
	}
	return writeKubeconfigs(s, ca)
}

// writeKubeletClient writes the apiserver's client certificate for the real node's kubelet, which
// authorizes it by webhook: group system:masters, as kubeadm's apiserver-kubelet-client had.
func writeKubeletClient(s setup, ca KeyPair) error {
	if s.node == nil {
		return nil
	}
	client, err := ca.Sign(clientCert("kube-apiserver-kubelet-client", "system:masters"))
	if err != nil {
		return err
	}
	if err := pkiutil.WriteCertAndKey(s.pki(""), "apiserver-kubelet-client", client.cert, client.key); err != nil {
		return fmt.Errorf("localcluster: writing certificates: %w", err)
	}
	return nil
}

// writeKubeconfigs writes a kubeconfig with a client certificate signed by ca for the admin and for
// each component that talks to the apiserver.
func writeKubeconfigs(s setup, ca KeyPair) error {
	users := map[string]certutil.Config{
		s.adminKubeconfig(): clientCert("localcluster-admin", "system:masters"),
		// The bootstrap RBAC roles of these two components are bound to exactly these user names.
		s.kubeconfig(ControllerManager): clientCert("system:kube-controller-manager"),
		s.kubeconfig(Scheduler):         clientCert("system:kube-scheduler"),
		// kwok writes node and pod status, leases and events and deletes pods: kwokctl gives it admin rights too.
		s.kubeconfig(Kwok): clientCert("kwok-controller", "system:masters"),
	}
	if s.node != nil {
		// The Node authorizer and the bootstrap role system:node-proxier know these names.
		users[s.kubeconfig(Kubelet)] = clientCert("system:node:"+s.node.Name, "system:nodes")
		users[s.kubeconfig(KubeProxy)] = clientCert("system:kube-proxy")
	}
	caPEM := ca.CertPEM()
	for path, user := range users {
		client, err := ca.Sign(user)
		if err != nil {
			return err
		}
		keyPEM, err := client.KeyPEM()
		if err != nil {
			return fmt.Errorf("localcluster: encoding the key of %s: %w", user.CommonName, err)
		}
		config := kubeconfigutil.CreateWithCerts(s.server(), "localcluster", user.CommonName, caPEM, keyPEM, client.CertPEM())
		if err := kubeconfigutil.WriteToDisk(path, config); err != nil {
			return fmt.Errorf("localcluster: writing kubeconfig: %w", err)
		}
	}
	return nil
}
