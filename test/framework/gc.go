package framework

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// gcReadyTimeout bounds the wait for the garbage collector to collect its first object: it
// discovers every resource and syncs an informer of each first.
const gcReadyTimeout = 60 * time.Second

// StartGarbageCollector runs kube-controller-manager (from KUBEBUILDER_ASSETS, where `make
// k8s-binaries` builds it) with only its garbage collector, against the apiserver of cfg, until
// the test ends; envtest runs no controllers, and without the garbage collector a foreground
// deletion never completes. It returns once the collector has collected an object, with c.
func StartGarbageCollector(t testing.TB, cfg *rest.Config, c client.Client, namespace string) {
	t.Helper()
	binary := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kube-controller-manager")
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := WriteKubeconfig(cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "kube-controller-manager.log")
	proc, err := localcluster.StartProcess("kube-controller-manager", binary, []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=garbage-collector-controller",
		// Nothing calls it: no serving, no delegated authentication.
		"--secure-port=0",
		"--leader-elect=false",
	}, nil, logPath, false)
	if err != nil {
		t.Fatalf("Starting the garbage collector: %v", err)
	}
	t.Cleanup(func() {
		if err := proc.Stop(10 * time.Second); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			if data, err := os.ReadFile(logPath); err == nil {
				t.Logf("kube-controller-manager log:\n%s", data)
			}
		}
	})
	waitCollecting(t, c, namespace)
}

// waitCollecting deletes an owner ConfigMap and waits until its dependent is collected.
func waitCollecting(t testing.TB, c client.Client, namespace string) {
	t.Helper()
	ctx := context.Background()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "gc-probe-owner-"}}
	if err := c.Create(ctx, owner); err != nil {
		t.Fatalf("Creating the garbage collector's probe: %v", err)
	}
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "gc-probe-dependent-",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
	if err := c.Create(ctx, dependent); err != nil {
		t.Fatalf("Creating the garbage collector's probe: %v", err)
	}
	if err := c.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	err := testutil.Poll(ctx, gcReadyTimeout, func(ctx context.Context) error {
		err := c.Get(ctx, client.ObjectKeyFromObject(dependent), &corev1.ConfigMap{})
		if err == nil {
			return fmt.Errorf("ConfigMap %s, whose owner is gone, is not collected", dependent.Name)
		}
		return client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("The garbage collector does not run: %v", err)
	}
}

// WriteKubeconfig writes a kubeconfig for rc to path, so that a separate process (the garbage
// collector, a scheduler) reaches the envtest apiserver with rc's identity. It mirrors what
// envtest does internally (controlplane.KubeConfigFromREST), which is not importable.
func WriteKubeconfig(rc *rest.Config, path string) error {
	host, err := url.Parse(rc.Host)
	if err != nil {
		return fmt.Errorf("parsing the apiserver address %q: %w", rc.Host, err)
	}
	scheme := "https"
	if !rest.IsConfigTransportTLS(*rc) {
		scheme = "http"
	}
	const name = "envtest"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   (&url.URL{Scheme: scheme, Host: host.Host, Path: rc.APIPath}).String(),
		CertificateAuthority:     rc.CAFile,
		CertificateAuthorityData: rc.CAData,
	}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificate:     rc.CertFile,
		ClientCertificateData: rc.CertData,
		ClientKey:             rc.KeyFile,
		ClientKeyData:         rc.KeyData,
		Token:                 rc.BearerToken,
		TokenFile:             rc.BearerTokenFile,
		Username:              rc.Username,
		Password:              rc.Password,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return nil
}
