// Package certs copies the webhook's serving certificate from the Secret its rotator keeps into
// the webhook server's directory (Copy), so that a first install serves within a second instead
// of after the kubelet's next sync of a Secret volume.
package certs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Intervals of the certificate copy: until the first copy, and after it (the rotator renews the
// certificate long before it expires, and the server reads the files again when they change).
const (
	certCopyFirstInterval = 250 * time.Millisecond
	certCopyInterval      = 30 * time.Second
)

// Copy writes the certificate that the rotator keeps in the Secret key into the webhook
// server's directory dir, as soon as the Secret has one and whenever it changes. The rotator
// waits for those files before the webhook is served; with the Secret mounted as a volume they
// would come only when the kubelet next syncs it, a minute or more after the Secret is written,
// during which a first install refuses every review. With dir on an emptyDir they come within
// a second. When dir is read-only (a Secret volume, as config/default mounted it before), the
// copy fails and the kubelet's mount provides the files, as before.
type Copy struct {
	// Reader reads the Secret: a client that reads the apiserver, since the manager's cache
	// holds no Secret of the webhook.
	Reader client.Reader
	// Key names the Secret.
	Key types.NamespacedName
	// Dir is the webhook server's certificate directory.
	Dir string
}

// NeedLeaderElection is false: every replica serves the webhook.
func (c *Copy) NeedLeaderElection() bool { return false }

// Start copies until ctx ends.
func (c *Copy) Start(ctx context.Context) error {
	interval := certCopyFirstInterval
	for {
		copied, err := c.copyOnce(ctx)
		switch {
		case err != nil:
			log.FromContext(ctx).V(1).Info("Copying the webhook's certificate from its Secret", "secret", c.Key, "error", err.Error())
		case copied:
			interval = certCopyInterval
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// copyOnce writes the Secret's certificate and key when they differ from the files; it tells
// whether the files now hold them.
func (c *Copy) copyOnce(ctx context.Context) (bool, error) {
	s := &corev1.Secret{}
	if err := c.Reader.Get(ctx, c.Key, s); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	crt, key := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
	if len(crt) == 0 || len(key) == 0 {
		return false, nil
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return false, fmt.Errorf("creating %s: %w", c.Dir, err)
	}
	// The key first: the server reloads on a change of the certificate file and reads both.
	for _, f := range []struct {
		name string
		data []byte
	}{{corev1.TLSPrivateKeyKey, key}, {corev1.TLSCertKey, crt}} {
		if err := writeIfChanged(filepath.Join(c.Dir, f.name), f.data); err != nil {
			return false, err
		}
	}
	return true, nil
}

// writeIfChanged writes data to path through a temporary file and a rename, so that a reader
// never sees half a file, unless path holds data already.
func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming %s: %w", tmp, err)
	}
	return nil
}
