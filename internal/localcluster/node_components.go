package localcluster

import (
	"context"
	"fmt"
	"net"
	"time"
)

// Proxy settings for containerd: registries are unreachable by design, and any pull attempt goes
// to a closed port on 127.0.0.1 rather than off the machine.
const noRegistryProxy = "http://127.0.0.1:9"

// endpointReconciler is how the apiserver maintains the kubernetes Service's endpoints.
func (s setup) endpointReconciler() string {
	if s.node != nil {
		return "lease"
	}
	return "none"
}

// kubeletClientArgs give the apiserver a client certificate for the kubelet (logs, exec).
func (s setup) kubeletClientArgs() []string {
	if s.node == nil {
		return nil
	}
	return []string{
		"--kubelet-client-certificate=" + s.pki("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + s.pki("apiserver-kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP",
	}
}

func containerd(s setup) component {
	return component{
		name:  Containerd,
		bin:   s.node.bins["containerd"],
		args:  []string{"--config=" + s.containerdConfig()},
		env:   []string{"HTTP_PROXY=" + noRegistryProxy, "HTTPS_PROXY=" + noRegistryProxy, "NO_PROXY=", "no_proxy="},
		ready: "serving on " + s.containerdSocket(),
		check: func(ctx context.Context) error {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "unix", s.containerdSocket())
			if err != nil {
				return err
			}
			return conn.Close()
		},
	}
}

func kubelet(s setup) component {
	return component{
		name: Kubelet,
		bin:  s.node.bins[Kubelet],
		args: []string{
			"--config=" + s.kubeletConfig(),
			"--kubeconfig=" + s.kubeconfig(Kubelet),
			"--root-dir=" + s.kubeletRoot(),
			"--cert-dir=" + s.kubeletRoot() + "/pki",
			"--node-ip=" + s.gateway,
			"--hostname-override=" + s.node.Name,
			"--node-labels=type=real",
		},
		healthURL: s.nodeURL(s.node.ports.KubeletHealthz, "/healthz"),
		ready:     "healthy",
	}
}

func kubeProxy(s setup) component {
	return component{
		name:      KubeProxy,
		bin:       s.node.bins[KubeProxy],
		args:      []string{"--config=" + s.kubeProxyConfig()},
		healthURL: s.nodeURL(s.node.ports.ProxyHealthz, "/healthz"),
		ready:     "healthy (rules synced)",
	}
}

func (s setup) nodeURL(port int, path string) string {
	return "http://127.0.0.1:" + itoa(port) + path
}

// importImages imports the image tarballs into containerd's k8s.io namespace (the CRI's).
func (c *Cluster) importImages(ctx context.Context, s setup) error {
	for _, img := range s.node.Images {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		_, err := execContext(ctx, s.node.bins["ctr"], "--address", s.containerdSocket(), "-n", "k8s.io", "images", "import", img)
		cancel()
		if err != nil {
			return fmt.Errorf("localcluster: importing image %s: %w", img, err)
		}
	}
	return nil
}
