package localcluster

import (
	"encoding/json"
	"fmt"
	"os"
)

// containerdTOML renders containerd's configuration: every directory and socket in WorkDir/node,
// the host's OOM score left alone (this host lacks CAP_SYS_RESOURCE), cgroupfs, no AppArmor, and the
// network namespaces under its state directory rather than /var/run/netns, so Stop finds them.
func (s setup) containerdTOML() string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
oom_score = 0

[grpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
    max_conf_num = 1
`, s.containerdRoot(), s.containerdState(), s.containerdSocket(), s.nodeDir("containerd", "opt"),
		s.node.SandboxImage, s.node.bins["runc"], s.node.CNIBinDir, s.cniConfDir())
}

// cniConflist is the pods' network: the bridge with host-local addresses from its /24 (the
// allocations kept in WorkDir), no masquerade, and portmap for hostPorts.
func (s setup) cniConflist() ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       s.node.networkName(),
		"plugins": []any{
			map[string]any{
				"type":      "bridge",
				"bridge":    s.node.bridgeName(),
				"isGateway": true,
				"ipMasq":    false,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": s.nodeDir("cni-ipam"),
					"ranges":  [][]map[string]string{{{"subnet": s.subnet, "gateway": s.gateway}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("localcluster: encoding the CNI configuration: %w", err)
	}
	return data, nil
}

// kubeletYAML renders the KubeletConfiguration (JSON is YAML): cgroup v1 allowed, cgroupfs below
// our own cgroupRoot, no OOM score change, serving on the bridge address with the cluster CA and
// webhook authorization, its health on 127.0.0.1, and no DNS server from the host.
func (s setup) kubeletYAML() ([]byte, error) {
	conf := map[string]any{
		"apiVersion":               "kubelet.config.k8s.io/v1beta1",
		"kind":                     "KubeletConfiguration",
		"failCgroupV1":             false,
		"cgroupDriver":             "cgroupfs",
		"cgroupRoot":               s.node.cgroupRoot(),
		"oomScoreAdj":              0,
		"address":                  s.gateway,
		"port":                     s.node.ports.Kubelet,
		"healthzBindAddress":       "127.0.0.1",
		"healthzPort":              s.node.ports.KubeletHealthz,
		"readOnlyPort":             0,
		"containerRuntimeEndpoint": "unix://" + s.containerdSocket(),
		"resolvConf":               s.resolvConf(),
		"podLogsDir":               s.podLogsDir(),
		"failSwapOn":               false,
		"registerNode":             true,
		// The images were imported and cannot be pulled again: never collect them.
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		// The node's filesystems are the host's, shared with everything else on it: the
		// defaults (imagefs.available 15%) evicted every pod on a host with 14.7% of its disk
		// free. The node lives for one test run; it evicts only when the host is all but full.
		"evictionHard": map[string]string{
			"memory.available":   "100Mi",
			"nodefs.available":   "1%",
			"nodefs.inodesFree":  "1%",
			"imagefs.available":  "1%",
			"imagefs.inodesFree": "1%",
		},
		"authentication": map[string]any{
			"anonymous": map[string]bool{"enabled": false},
			"webhook":   map[string]bool{"enabled": true},
			"x509":      map[string]string{"clientCAFile": s.pki("ca.crt")},
		},
		"authorization": map[string]string{"mode": "Webhook"},
	}
	return marshalConfig("kubelet", conf)
}

// kubeProxyYAML renders the KubeProxyConfiguration: iptables mode, the host's conntrack settings
// left alone, NodePorts only on the bridge, health and metrics on 127.0.0.1.
func (s setup) kubeProxyYAML() ([]byte, error) {
	conf := map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"mode":               "iptables",
		"clientConnection":   map[string]string{"kubeconfig": s.kubeconfig(KubeProxy)},
		"hostnameOverride":   s.node.Name,
		"bindAddress":        s.gateway,
		"healthzBindAddress": "127.0.0.1:" + itoa(s.node.ports.ProxyHealthz),
		"metricsBindAddress": "127.0.0.1:" + itoa(s.node.ports.ProxyMetrics),
		"clusterCIDR":        s.subnet,
		"nodePortAddresses":  []string{s.subnet},
		"conntrack": map[string]any{
			"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s",
		},
		// Localhost NodePorts would set net.ipv4.conf.all.route_localnet.
		"iptables": map[string]any{"localhostNodePorts": false},
	}
	return marshalConfig("kube-proxy", conf)
}

func marshalConfig(what string, conf map[string]any) ([]byte, error) {
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("localcluster: encoding the %s configuration: %w", what, err)
	}
	return data, nil
}

// writeNodeConfigs writes containerd's, the CNI, kubelet's and kube-proxy's configuration files.
func (s setup) writeNodeConfigs() error {
	cni, err := s.cniConflist()
	if err != nil {
		return err
	}
	kubelet, err := s.kubeletYAML()
	if err != nil {
		return err
	}
	proxy, err := s.kubeProxyYAML()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.cniConfDir(), 0o755); err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	files := map[string][]byte{
		s.containerdConfig():                         []byte(s.containerdTOML()),
		s.cniConfDir() + "/10-localcluster.conflist": cni,
		s.kubeletConfig():                            kubelet,
		s.kubeProxyConfig():                          proxy,
		// No nameserver: pods must not resolve names through the host's (outside) DNS servers.
		s.resolvConf(): []byte("# localcluster: no nameserver, so that nothing is resolved outside this machine\n"),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("localcluster: writing %s: %w", path, err)
		}
	}
	return nil
}
