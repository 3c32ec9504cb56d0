// Package localcluster runs a local simulated Kubernetes control plane for end-to-end tests: etcd,
// kube-apiserver, kube-controller-manager, a default kube-scheduler and kwok (fake nodes whose pods are
// marked Running without kubelets), as processes on this machine that listen on 127.0.0.1 only. The
// apiserver serves the gang-scheduling APIs (GenericWorkload: scheduling.k8s.io/v1beta1 PodGroups),
// so that schedulers with that gate can run against it.
//
// It is test code and Linux only: it identifies processes through /proc and uses Pdeathsig.
//
//	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: binDir, SchedulerBinary: sched, WorkDir: dir})
//	defer c.Stop()
//	cfg, err := c.RESTConfig()
//	err = c.CreateNodes(ctx, []*corev1.Node{localcluster.FakeNode("node-1", nil, nil)})
//
// Start writes the started processes to a state file in WorkDir, so that another process can find
// and stop them with Attach(dir) and Stop (this is what hack/localcluster does).
//
// # A real node
//
// With Options.RealNode, Start also runs one real node beside kwok's fake ones: containerd (Debian's
// 1.6, `make node-deps`), a kubelet and kube-proxy (from BinDir). It needs root (else ErrNeedsRoot)
// and changes the host, so it records the host's state in the state file first:
//
//	c, err := localcluster.Start(ctx, localcluster.Options{..., RealNode: &localcluster.RealNodeOptions{
//		Images: []string{"bin/images/pause.tar"}, SandboxImage: "localcluster.invalid/pause:1"}})
//	node, _ := c.RealNode() // name, IP, bridge, subnet
//
// Before the apiserver starts, Start creates a bridge (lcbr<id>, id from WorkDir) with the gateway
// address of a /24 of 10.250.0.0/16 that no host address or route overlaps, and a chain of ours in
// the mangle table's FORWARD (IPv4 and IPv6) that drops every packet forwarded from the bridge to
// another interface: no pod traffic leaves the machine. The apiserver then binds and advertises that
// address instead of 127.0.0.1 (its serving certificate names it, every kubeconfig points at it,
// the lease endpoint reconciler publishes it), so pods reach it through the kubernetes Service.
// The pods' network is CNI bridge with host-local addresses of the /24, no masquerade, plus
// portmap. containerd keeps its root, state, socket and the pods' network namespaces in
// WorkDir/node and imports RealNodeOptions.Images; a pull would go to a closed port on 127.0.0.1.
// The kubelet runs with cgroupfs below its own cgroupRoot (/localcluster-<id>), serves on the
// bridge address with the cluster CA and webhook authorization, and gives pods a resolv.conf without
// nameservers. kube-proxy runs in iptables mode and leaves the conntrack sysctls alone. Start
// returns once the node is Ready and untainted.
//
// Stop (also after Attach) stops kubelet and kube-proxy, kills every process in the node's cgroups,
// stops containerd and its shims (found by their -address argument), unmounts everything under
// WorkDir, removes the shims' sockets and runc state in /run/containerd, libcni's cached results of
// our sandboxes and the kubelet's /var/log/containers links, deletes the veths and the bridge,
// restores every iptables and ip6tables table that differs from the one recorded (a table that did
// not exist is deleted), writes back the sysctls kubelet and the bridge plugin change, removes the
// cgroups and the host directories that did not exist before. SnapshotHost and HostSnapshot.Diff
// let a test check that nothing is left. One real node per host at a time: kube-proxy's chains are
// global.
//
// Why not kwokctl: kwokctl v0.8.0 (binary runtime, the same binaries, offline) was measured against
// Start on this project's 2-core machine, four alternating rounds until the default ServiceAccount and
// kube-root-ca.crt exist: 10.9-14.0 s against 4.2-5.8 s, and 0.8 s against 0.3 s until two fake nodes
// are schedulable. It also starts its processes without a parent-death signal (a test killed by its
// timeout would leave them running), picks ports by counting down from 32767 in each kwokctl process
// (clusters started at the same time race for the same ports), and has no front-proxy CA.
package localcluster

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Component names; they are also the names of the binaries and of the log files in WorkDir/logs.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Kwok              = "kwok"
)

const (
	// StateFileName is the file in WorkDir that records the started processes (JSON).
	StateFileName = "localcluster.json"
	// KubeconfigFileName is the admin kubeconfig (group system:masters) in WorkDir.
	KubeconfigFileName = "kubeconfig"

	// BinDirEnv names the variable that, when set, is the directory with etcd, kube-apiserver, kube-controller-manager and kwok.
	BinDirEnv = "LOCALCLUSTER_BIN_DIR"
	// SchedulerBinaryEnv names the variable that, when set, is the kube-scheduler binary to run as the default scheduler.
	SchedulerBinaryEnv = "LOCALCLUSTER_SCHEDULER"

	// DefaultStartTimeout bounds Start when Options.StartTimeout is zero; a cold start takes 4-8 s.
	DefaultStartTimeout = 2 * time.Minute

	serviceCIDR          = "10.96.0.0/16"
	podCIDR              = "10.244.0.0/16" // kwok assigns pod IPs from it; a /16 is never exhausted in a test
	frontProxyClientName = "front-proxy-client"
	kwokLeaseSeconds     = 40
	stopGrace            = 10 * time.Second
)

//go:embed kwok-stages.yaml
var kwokStages []byte

// Ports are the TCP ports on 127.0.0.1; a zero port is replaced by a free one at Start.
type Ports struct {
	Etcd, EtcdPeer, APIServer, ControllerManager, Scheduler, Kwok int
}

// Options configure Start.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager and kwok (`make k8s-binaries`).
	BinDir string
	// SchedulerBinary is the kube-scheduler that schedules pods with the default scheduler name.
	SchedulerBinary string
	// WorkDir holds the state: certificates, etcd data, kubeconfigs, logs and the state file. Start
	// replaces what an earlier cluster left there, so every start is a fresh cluster.
	WorkDir string
	// Ports are the ports to listen on; zero ones are chosen free.
	Ports Ports
	// Detach lets the processes outlive the caller (for a CLI). Without it they are killed when the
	// caller exits, even if it never calls Stop.
	Detach bool
	// StartTimeout bounds Start; zero means DefaultStartTimeout.
	StartTimeout time.Duration
	// RealNode, when set, adds one real node (kubelet, kube-proxy, containerd) beside kwok's fake
	// nodes; it needs root. See the package documentation.
	RealNode *RealNodeOptions
}

// Cluster is a running local control plane, started by Start or found by Attach.
type Cluster struct {
	workDir    string
	kubeconfig string
	procs      []*Process
	// node is the real node's record, nil without one; nodeReady is how long it took after the
	// kubelet started (zero after Attach).
	node      *nodeState
	nodeReady time.Duration
}

// state is the content of the state file.
type state struct {
	Kubeconfig string     `json:"kubeconfig"`
	Processes  []*Process `json:"processes"`
	Node       *nodeState `json:"node,omitempty"`
}

// Start starts a fresh cluster in opts.WorkDir and returns once every component is healthy and the
// controller manager's controllers run. On error it stops what it started.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	s, err := newSetup(opts)
	if err != nil {
		return nil, err
	}
	if err := s.prepareWorkDir(); err != nil {
		return nil, err
	}
	c := &Cluster{workDir: s.WorkDir, kubeconfig: s.adminKubeconfig()}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
		}
	}()
	if s.node != nil {
		// Before the certificates and the apiserver: both use the bridge's address.
		if err := c.prepareHost(s); err != nil {
			return nil, err
		}
	}
	if err := writePKI(s); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.StartTimeout)
	defer cancel()
	if err := c.runGroups(ctx, s); err != nil {
		return nil, err
	}
	if err := c.waitControllers(ctx); err != nil {
		return nil, err
	}
	if s.node != nil {
		if err := c.waitRealNode(ctx, s); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// runGroups starts the components in groups; each group starts together and is then waited for.
// The last group only needs the apiserver; the real node's images are imported into containerd
// before its kubelet starts.
func (c *Cluster) runGroups(ctx context.Context, s setup) error {
	first, last := []component{etcd(s)}, []component{controllerManager(s), scheduler(s), kwok(s)}
	if s.node != nil {
		first, last = append(first, containerd(s)), append(last, kubelet(s), kubeProxy(s))
	}
	if err := c.run(ctx, s, first...); err != nil {
		return err
	}
	if s.node != nil {
		if err := c.importImages(ctx, s); err != nil {
			return err
		}
	}
	if err := c.run(ctx, s, apiServer(s)); err != nil {
		return err
	}
	return c.run(ctx, s, last...)
}

// run starts the components, then waits until each answers its health check.
func (c *Cluster) run(ctx context.Context, s setup, components ...component) error {
	client, err := c.healthClient()
	if err != nil {
		return err
	}
	procs := make([]*Process, len(components))
	for i, comp := range components {
		bin := comp.bin
		if bin == "" {
			bin = s.binary(comp.name)
		}
		if procs[i], err = StartProcess(comp.name, bin, comp.args, comp.env, s.logFile(comp.name), s.Detach); err != nil {
			return fmt.Errorf("localcluster: %w", err)
		}
		c.procs = append(c.procs, procs[i])
		if err := c.writeState(); err != nil {
			return err
		}
	}
	for i, comp := range components {
		check := comp.check
		if check == nil {
			check = getOK(client, comp.healthURL)
		}
		if err := waitFor(ctx, procs[i], comp.ready, check); err != nil {
			return err
		}
	}
	return nil
}

// healthClient returns an HTTP client for the health checks: it trusts the cluster CA and presents
// the admin certificate (the apiserver's /readyz needs an authenticated user until its RBAC is ready).
func (c *Cluster) healthClient() (*http.Client, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 2 * time.Second
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	return client, nil
}

// waitControllers waits until the controller manager runs its controllers, about 5 s after it
// reports healthy: pods in namespace default need its ServiceAccount and the root CA ConfigMap.
func (c *Cluster) waitControllers(ctx context.Context) error {
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	return waitFor(ctx, c.process(ControllerManager), "running its controllers (default ServiceAccount and kube-root-ca.crt ConfigMap)", func(ctx context.Context) error {
		if _, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return err
		}
		_, err := client.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err
	})
}

// Attach returns the cluster recorded in workDir's state file, so that a process other than the
// one that started it can stop it. The error wraps os.ErrNotExist when there is no state file.
func Attach(workDir string) (*Cluster, error) {
	workDir, err := filepath.Abs(workDir)
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	data, err := os.ReadFile(filepath.Join(workDir, StateFileName))
	if err != nil {
		return nil, fmt.Errorf("localcluster: reading state: %w", err)
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("localcluster: parsing %s: %w", filepath.Join(workDir, StateFileName), err)
	}
	return &Cluster{workDir: workDir, kubeconfig: s.Kubeconfig, procs: s.Processes, node: s.Node}, nil
}

// Kubeconfig returns the absolute path of the admin kubeconfig (a client certificate in group
// system:masters).
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// RESTConfig returns an admin client configuration. Its client-side rate limit is raised: the
// local apiserver has no other tenants to protect, and tests create objects in bursts.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("localcluster: loading %s: %w", c.kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg, nil
}

// Processes returns the processes of the cluster in start order.
func (c *Cluster) Processes() []Process {
	out := make([]Process, 0, len(c.procs))
	for _, p := range c.procs {
		// Not *p: waitErr may be written concurrently, and only Stop may signal through cmd.
		out = append(out, Process{Name: p.Name, PID: p.PID, StartTime: p.StartTime, Log: p.Log, done: p.done})
	}
	return out
}

// process returns the process of a started component.
func (c *Cluster) process(name string) *Process {
	for _, p := range c.procs {
		if p.Name == name {
			return p
		}
	}
	panic("localcluster: no process " + name)
}

// Stop stops the recorded processes in reverse start order (SIGTERM, then SIGKILL after a grace
// period) and waits until they are gone. It signals only the recorded PIDs, and only while they still
// belong to the process that was started. Once all are gone it removes the state file; stopping a
// stopped cluster does nothing. With a real node, it stops the node's processes first and, once
// every process is gone, leaves the host as the start found it (see the package documentation).
func (c *Cluster) Stop() error {
	var errs []error
	var shimFiles []string
	if c.node != nil {
		files, err := c.stopNode()
		if err != nil {
			errs = append(errs, err)
		}
		shimFiles = files
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		if err := c.procs[i].Stop(stopGrace); err != nil {
			errs = append(errs, err)
		}
	}
	// Only once every process is gone: a running kubelet or kube-proxy would add its rules again.
	// After an error the state file stays, and another Stop tries again.
	if c.node != nil && len(errs) == 0 {
		if err := c.restoreHost(shimFiles); err != nil {
			errs = append(errs, err)
		} else {
			// Undone: a second Stop must not restore the recorded host state over later changes.
			c.node = nil
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	if err := os.Remove(filepath.Join(c.workDir, StateFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("localcluster: %w", err)
	}
	return nil
}

// writeState records the processes started so far; written after each start, so that a start that
// fails half-way (or a CLI killed during it) still leaves a state file that Stop can use.
func (c *Cluster) writeState() error {
	data, err := json.MarshalIndent(state{Kubeconfig: c.kubeconfig, Processes: c.procs, Node: c.node}, "", "  ")
	if err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	path := filepath.Join(c.workDir, StateFileName)
	// Written then renamed, so that a reader never sees half a file.
	if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
		return fmt.Errorf("localcluster: writing state: %w", err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("localcluster: writing state: %w", err)
	}
	return nil
}

// waitFor polls check until it succeeds, p exits, or ctx ends. Errors name the component and its log.
func waitFor(ctx context.Context, p *Process, what string, check func(context.Context) error) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		last := check(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("localcluster: %s exited (%v) before it was %s; see %s%s", p.Name, p.waitErr, what, p.Log, logTail(p.Log))
		case <-ctx.Done():
			return fmt.Errorf("localcluster: %s not %s before the start deadline (%w); last check: %w; see %s%s",
				p.Name, what, context.Cause(ctx), last, p.Log, logTail(p.Log))
		case <-tick.C:
		}
	}
}

// getOK returns a check that url answers 200.
func getOK(client *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
		}
		return nil
	}
}
