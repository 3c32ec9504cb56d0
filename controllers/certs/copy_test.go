package certs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestCopy: nothing is written while the Secret has no certificate; then the files hold the
// Secret's, a copy of the same Secret leaves them untouched, and a renewed certificate replaces
// them.
func TestCopy(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "webhook-cert"}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	c := fake.NewClientBuilder().WithObjects(secret).Build()
	dir := filepath.Join(t.TempDir(), "serving-certs")
	cp := &Copy{Reader: c, Key: key, Dir: dir}

	if copied, err := cp.copyOnce(t.Context()); err != nil || copied {
		t.Fatalf("empty Secret: copied %v, %v; want nothing copied", copied, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("empty Secret: %s exists (%v)", dir, err)
	}

	secret.Data = map[string][]byte{corev1.TLSCertKey: []byte("cert-1"), corev1.TLSPrivateKeyKey: []byte("key-1")}
	if err := c.Update(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	if copied, err := cp.copyOnce(t.Context()); err != nil || !copied {
		t.Fatalf("copied %v, %v; want copied", copied, err)
	}
	assertFile(t, filepath.Join(dir, corev1.TLSCertKey), "cert-1")
	assertFile(t, filepath.Join(dir, corev1.TLSPrivateKeyKey), "key-1")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, corev1.TLSCertKey), old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.copyOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(filepath.Join(dir, corev1.TLSCertKey)); err != nil || !info.ModTime().Equal(old) {
		t.Errorf("the same certificate was written again (%v): the server would reload for nothing", err)
	}

	secret.Data = map[string][]byte{corev1.TLSCertKey: []byte("cert-2"), corev1.TLSPrivateKeyKey: []byte("key-2")}
	if err := c.Update(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.copyOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(dir, corev1.TLSCertKey), "cert-2")
	assertFile(t, filepath.Join(dir, corev1.TLSPrivateKeyKey), "key-2")
}

func assertFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Errorf("%s: %q, %v; want %q", path, got, err, want)
	}
}
