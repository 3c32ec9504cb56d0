package localcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/schedops/scheduler-profile-operator/internal/freeport"
)

// Names of the real node's processes (and of their log files in WorkDir/logs). Kubelet and KubeProxy
// are binaries in Options.BinDir; Containerd comes from the host's PATH (Debian's containerd).
const (
	Kubelet    = "kubelet"
	KubeProxy  = "kube-proxy"
	Containerd = "containerd"
)

const (
	// DefaultRealNodeName is the real node's name when RealNodeOptions.Name is empty.
	DefaultRealNodeName = "real-node"
	// DefaultCNIBinDir holds the CNI plugins of Debian's containernetworking-plugins.
	DefaultCNIBinDir = "/usr/lib/cni"

	nodeDepsHint = "make node-deps"
	// bridgePrefix starts the name of every real node's bridge.
	bridgePrefix = "lcbr"
	// unixPathMax is the size of sun_path: a unix socket path must be shorter.
	unixPathMax = 108
)

// ErrNeedsRoot is returned (wrapped) by Start when Options.RealNode is set and the caller is not
// root: a kubelet, containerd, a bridge and iptables rules need it. Tests skip on it.
var ErrNeedsRoot = errors.New("localcluster: a real node needs root")

// RealNodeOptions add one real node (kubelet, kube-proxy and containerd) beside kwok's fake nodes.
type RealNodeOptions struct {
	// Name is the node's name; empty means DefaultRealNodeName.
	Name string
	// Images are image tarballs (docker save or OCI layout archives) imported into containerd's
	// k8s.io namespace before the kubelet starts. Nothing is ever pulled: registries are unreachable.
	Images []string
	// SandboxImage is the reference of the pause image, one of Images (containerd's sandbox_image).
	SandboxImage string
	// CNIBinDir holds the bridge, host-local, portmap and loopback plugins; empty means DefaultCNIBinDir.
	CNIBinDir string
}

// RealNode describes the running real node.
type RealNode struct {
	// Name is the node's name.
	Name string
	// IP is the node's address: the gateway address of its bridge, which the apiserver also binds.
	IP string
	// Bridge is the name of the bridge the pods are attached to; Subnet is its /24.
	Bridge, Subnet string
	// ReadyAfterKubeletStart is how long the node took to be Ready and schedulable once the kubelet
	// started (zero after Attach).
	ReadyAfterKubeletStart time.Duration
}

// nodePorts are the ports of the real node's processes: the kubelet on the bridge address, the
// rest on 127.0.0.1.
type nodePorts struct {
	Kubelet, KubeletHealthz, ProxyHealthz, ProxyMetrics int
}

// nodeSetup is the real node of a setup: its options with defaults and the host binaries found.
type nodeSetup struct {
	RealNodeOptions
	// id is derived from WorkDir: it names the bridge, the iptables chain and the cgroup root.
	id string
	// workDir is the cluster's WorkDir, recorded as the bridge's alias (see RecoverStaleNodes).
	workDir string
	ports   nodePorts
	// bins maps containerd, ctr, runc, ip, iptables... to their paths.
	bins map[string]string
}

// hostBinaries are the programs of `make node-deps` that the node needs on the PATH.
var hostBinaries = []string{
	"containerd", "containerd-shim-runc-v2", "ctr", "runc", "ip",
	"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore",
}

// cniPlugins are the plugins the node's CNI configuration uses.
var cniPlugins = []string{"bridge", "host-local", "portmap", "loopback"}

// newNodeSetup checks the real node's options and finds its binaries.
func newNodeSetup(opts *RealNodeOptions, binDir, workDir string) (*nodeSetup, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w (euid %d)", ErrNeedsRoot, os.Geteuid())
	}
	n := &nodeSetup{RealNodeOptions: *opts, workDir: workDir, bins: map[string]string{}}
	if n.Name == "" {
		n.Name = DefaultRealNodeName
	}
	if n.CNIBinDir == "" {
		n.CNIBinDir = DefaultCNIBinDir
	}
	if n.SandboxImage == "" {
		return nil, errors.New("localcluster: RealNodeOptions.SandboxImage is empty")
	}
	for _, img := range n.Images {
		if _, err := os.Stat(img); err != nil {
			return nil, fmt.Errorf("localcluster: image tarball: %w", err)
		}
	}
	if err := n.findBinaries(binDir); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(workDir))
	n.id = hex.EncodeToString(sum[:4])
	free, err := freeport.Ports(4)
	if err != nil {
		return nil, err
	}
	n.ports = nodePorts{Kubelet: free[0], KubeletHealthz: free[1], ProxyHealthz: free[2], ProxyMetrics: free[3]}
	return n, nil
}

// findBinaries checks kubelet and kube-proxy in binDir and the host's programs and CNI plugins.
func (n *nodeSetup) findBinaries(binDir string) error {
	for _, name := range []string{Kubelet, KubeProxy} {
		path := filepath.Join(binDir, name)
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("localcluster: %s binary missing, run `make bin/k8s/kubelet bin/k8s/kube-proxy`: %w", name, err)
		}
		n.bins[name] = path
	}
	for _, name := range hostBinaries {
		path, err := exec.LookPath(name)
		if err != nil {
			return fmt.Errorf("localcluster: %s missing for the real node, run `%s`: %w", name, nodeDepsHint, err)
		}
		n.bins[name] = path
	}
	for _, name := range cniPlugins {
		if _, err := os.Stat(filepath.Join(n.CNIBinDir, name)); err != nil {
			return fmt.Errorf("localcluster: CNI plugin %s missing, run `%s`: %w", name, nodeDepsHint, err)
		}
	}
	return nil
}

// bridgeName is the bridge's interface name: at most 15 characters (IFNAMSIZ), unique per WorkDir.
func (n *nodeSetup) bridgeName() string { return bridgePrefix + n.id }

// chainName is our iptables chain, in the mangle table's FORWARD (see addForwardDrop).
func (n *nodeSetup) chainName() string { return "LOCALCLUSTER-" + n.id }

// cgroupRoot is the kubelet's cgroupRoot: every pod and container cgroup is below it.
func (n *nodeSetup) cgroupRoot() string { return "/localcluster-" + n.id }

// networkName is the CNI network's name; host-local and libcni name their files after it.
func (n *nodeSetup) networkName() string { return "localcluster-" + n.id }

// nodeDir returns a path in WorkDir/node, the real node's files.
func (s setup) nodeDir(elem ...string) string {
	return s.path(append([]string{"node"}, elem...)...)
}

func (s setup) containerdConfig() string { return s.nodeDir("containerd.toml") }
func (s setup) containerdRoot() string   { return s.nodeDir("containerd", "root") }
func (s setup) containerdState() string  { return s.nodeDir("containerd", "state") }
func (s setup) containerdSocket() string { return s.nodeDir("containerd.sock") }
func (s setup) cniConfDir() string       { return s.nodeDir("cni") }
func (s setup) kubeletConfig() string    { return s.nodeDir("kubelet.yaml") }
func (s setup) kubeletRoot() string      { return s.nodeDir("kubelet") }
func (s setup) podLogsDir() string       { return s.nodeDir("pod-logs") }
func (s setup) resolvConf() string       { return s.nodeDir("resolv.conf") }
func (s setup) kubeProxyConfig() string  { return s.nodeDir("kube-proxy.yaml") }

// checkSocketPath refuses a WorkDir whose containerd socket (and its .ttrpc sibling) would not fit
// in a unix socket address.
func (s setup) checkSocketPath() error {
	if p := s.containerdSocket() + ".ttrpc"; len(p) >= unixPathMax {
		return fmt.Errorf("localcluster: WorkDir %s is too long for a real node: the socket %s has more than %d bytes", s.WorkDir, p, unixPathMax-1)
	}
	return nil
}

// apiHost is the address the apiserver binds and advertises: the bridge's gateway address with a
// real node (so that pods reach it through the kubernetes Service), else 127.0.0.1.
func (s setup) apiHost() string {
	if s.gateway != "" {
		return s.gateway
	}
	return "127.0.0.1"
}

func itoa(i int) string { return strconv.Itoa(i) }

// completeNode checks the real node's options and picks its bridge's subnet.
func (s *setup) completeNode() error {
	node, err := newNodeSetup(s.RealNode, s.BinDir, s.WorkDir)
	if err != nil {
		return err
	}
	s.node = node
	if err := s.checkSocketPath(); err != nil {
		return err
	}
	if err := checkNoOtherNode(); err != nil {
		return err
	}
	subnet, err := freeSubnet(node.id)
	if err != nil {
		return err
	}
	gw := append(net.IP(nil), subnet.IP.To4()...)
	gw[3] = 1
	s.subnet, s.gateway = subnet.String(), gw.String()
	return nil
}

// removeNodeDir removes the real node's files of an earlier cluster; it refuses while anything
// is still mounted there.
func (s setup) removeNodeDir() error {
	points, err := mountsUnder(s.WorkDir)
	if err != nil {
		return err
	}
	if len(points) > 0 {
		return fmt.Errorf("localcluster: %d mounts left under %s (first %s); unmount them first", len(points), s.WorkDir, points[0])
	}
	if err := os.RemoveAll(s.nodeDir()); err != nil {
		return fmt.Errorf("localcluster: removing old node files: %w", err)
	}
	return nil
}

// waitRealNode waits until the real node is Ready and schedulable and records how long that took
// after the kubelet started.
func (c *Cluster) waitRealNode(ctx context.Context, s setup) error {
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	if err := c.waitSchedulable(ctx, client, s.node.Name); err != nil {
		return err
	}
	c.nodeReady = time.Since(c.findProcess(Kubelet).began)
	return nil
}

// RealNode returns the real node, and false without one.
func (c *Cluster) RealNode() (RealNode, bool) {
	if c.node == nil {
		return RealNode{}, false
	}
	return RealNode{
		Name: c.node.Name, IP: c.node.Gateway, Bridge: c.node.Bridge, Subnet: c.node.Subnet,
		ReadyAfterKubeletStart: c.nodeReady,
	}, true
}

// TagImage gives an image that containerd holds in the k8s.io namespace another name, for
// example a name by digest (repo@sha256:...), which the CRI resolves only when an image of that
// name exists: importing a tarball names an image by its tags only.
func (c *Cluster) TagImage(ctx context.Context, src, dst string) error {
	if c.node == nil {
		return errors.New("localcluster: the cluster has no real node")
	}
	if _, err := execContext(ctx, c.node.Bins["ctr"], "--address", c.node.ContainerdSocket, "-n", "k8s.io", "images", "tag", "--force", src, dst); err != nil {
		return fmt.Errorf("localcluster: tagging image %s as %s: %w", src, dst, err)
	}
	return nil
}

// checkNoOtherNode refuses a second real node on the host: kube-proxy's and kubelet's iptables
// chains are global, and two kube-proxies would rewrite each other's rules.
func checkNoOtherNode() error {
	bridges, err := nodeBridges()
	if err != nil {
		return err
	}
	if len(bridges) == 0 {
		return nil
	}
	b := bridges[0]
	if b.workDir == "" {
		return fmt.Errorf("localcluster: another real node's bridge %s is on this host and names no WorkDir; stop that cluster first, or delete the bridge (ip link del %s)", b.name, b.name)
	}
	return fmt.Errorf("localcluster: another real node's bridge %s is on this host, of the cluster in %s; stop that cluster first (go run ./hack/localcluster stop --dir %s, or RecoverStaleNodes once its processes are gone)", b.name, b.workDir, b.workDir)
}
