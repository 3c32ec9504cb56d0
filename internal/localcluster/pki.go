package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// keyPair is a certificate and its key, PEM encoded.
type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey

	certPEM []byte
	keyPEM  []byte
}

// newKeyPair signs a new certificate for tmpl with parent (self-signed when parent is nil).
// ECDSA P-256 because RSA key generation took seconds per key on a 2-core machine.
func newKeyPair(tmpl *x509.Certificate, parent *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key for %q: %w", tmpl.Subject.CommonName, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	// Back-dated an hour so that small clock differences never make a fresh certificate "not yet valid".
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(365 * 24 * time.Hour)

	signerCert, signerKey := tmpl, key
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signerKey)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding key of %q: %w", tmpl.Subject.CommonName, err)
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func newCA(name string) (*keyPair, error) {
	return newKeyPair(&x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
}

func newClientCert(ca *keyPair, user string, groups ...string) (*keyPair, error) {
	return newKeyPair(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca)
}

// pki holds the files every component is given, all under WorkDir/pki.
type pki struct {
	dir string

	ca            *keyPair
	serving       *keyPair // kube-apiserver, kube-controller-manager and kube-scheduler on 127.0.0.1
	admin         *keyPair
	controllerMgr *keyPair
	scheduler     *keyPair
	kwok          *keyPair
	frontProxyCA  *keyPair
	frontProxy    *keyPair
}

// serviceIP is the first address of serviceCIDR: the apiserver's "kubernetes" Service, which
// in-cluster clients reach the apiserver through, so the serving certificate names it.
const serviceIP = "10.96.0.1"

func newPKI(dir string) (*pki, error) {
	p := &pki{dir: dir}
	var err error
	if p.ca, err = newCA("localcluster-ca"); err != nil {
		return nil, err
	}
	p.serving, err = newKeyPair(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "localcluster-serving"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)},
		DNSNames: []string{
			"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local",
		},
	}, p.ca)
	if err != nil {
		return nil, err
	}
	if p.admin, err = newClientCert(p.ca, "localcluster-admin", "system:masters"); err != nil {
		return nil, err
	}
	// The bootstrap RBAC roles of these two components are bound to exactly these user names.
	if p.controllerMgr, err = newClientCert(p.ca, "system:kube-controller-manager"); err != nil {
		return nil, err
	}
	if p.scheduler, err = newClientCert(p.ca, "system:kube-scheduler"); err != nil {
		return nil, err
	}
	// kwok writes node and pod status, leases and events and deletes pods: kwokctl gives it admin rights too.
	if p.kwok, err = newClientCert(p.ca, "kwok-controller", "system:masters"); err != nil {
		return nil, err
	}
	if p.frontProxyCA, err = newCA("localcluster-front-proxy-ca"); err != nil {
		return nil, err
	}
	if p.frontProxy, err = newClientCert(p.frontProxyCA, frontProxyClientName); err != nil {
		return nil, err
	}
	// The apiserver signs and verifies service-account tokens with this key; the controller manager's
	// token controller signs the legacy token Secrets with it.
	saPriv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating service-account key: %w", err)
	}
	saKey, err := x509.MarshalECPrivateKey(saPriv)
	if err != nil {
		return nil, fmt.Errorf("encoding service-account key: %w", err)
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saPriv.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("encoding service-account public key: %w", err)
	}

	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	files := map[string][]byte{
		"ca.crt":             p.ca.certPEM,
		"serving.crt":        p.serving.certPEM,
		"serving.key":        p.serving.keyPEM,
		"front-proxy-ca.crt": p.frontProxyCA.certPEM,
		"front-proxy.crt":    p.frontProxy.certPEM,
		"front-proxy.key":    p.frontProxy.keyPEM,
		"sa.key":             pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saKey}),
		"sa.pub":             pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
	}
	for name, data := range files {
		if err := os.WriteFile(p.path(name), data, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return p, nil
}

// path returns the path of one of the files written by newPKI.
func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }
