// Package localcluster runs a local simulated Kubernetes control plane for end-to-end tests: etcd,
// kube-apiserver, kube-controller-manager, a default kube-scheduler and kwok (fake nodes whose pods are
// marked Running without kubelets), as processes on this machine that listen on 127.0.0.1 only.
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
package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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

	// BinDirEnv, when set, is the directory with etcd, kube-apiserver, kube-controller-manager and kwok.
	BinDirEnv = "LOCALCLUSTER_BIN_DIR"
	// SchedulerBinaryEnv, when set, is the kube-scheduler binary to run as the default scheduler.
	SchedulerBinaryEnv = "LOCALCLUSTER_SCHEDULER"

	// DefaultStartTimeout bounds Start when Options.StartTimeout is zero; a cold start takes about 11 s.
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
}

// Cluster is a running local control plane, started by Start or found by Attach.
type Cluster struct {
	workDir    string
	kubeconfig string
	procs      []*Process
}

// state is the content of the state file.
type state struct {
	Kubeconfig string     `json:"kubeconfig"`
	Processes  []*Process `json:"processes"`
}

// Start starts a fresh cluster in opts.WorkDir and returns once every component is healthy and the
// controller manager's controllers run. On error it stops what it started.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	binaries := map[string]string{
		Etcd:              filepath.Join(opts.BinDir, Etcd),
		APIServer:         filepath.Join(opts.BinDir, APIServer),
		ControllerManager: filepath.Join(opts.BinDir, ControllerManager),
		Kwok:              filepath.Join(opts.BinDir, Kwok),
		Scheduler:         opts.SchedulerBinary,
	}
	for _, name := range []string{Etcd, APIServer, ControllerManager, Kwok} {
		if _, err := os.Stat(binaries[name]); err != nil {
			return nil, fmt.Errorf("localcluster: %s binary missing, run `make k8s-binaries`: %w", name, err)
		}
	}
	if opts.SchedulerBinary == "" {
		return nil, errors.New("localcluster: Options.SchedulerBinary is empty")
	}
	if _, err := os.Stat(opts.SchedulerBinary); err != nil {
		return nil, fmt.Errorf("localcluster: kube-scheduler binary missing, run `make bin/kube-scheduler`: %w", err)
	}
	if opts.WorkDir == "" {
		return nil, errors.New("localcluster: Options.WorkDir is empty")
	}
	workDir, err := filepath.Abs(opts.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(workDir, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	switch old, err := Attach(workDir); {
	case err == nil:
		for _, p := range old.procs {
			if p.Alive() {
				return nil, fmt.Errorf("localcluster: the cluster in %s is still running (%s, pid %d); stop it first", workDir, p.Name, p.PID)
			}
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	// Nodes and leases of an earlier run would come back with its etcd data (and kwok would not take
	// over leases held by its previous identity for about 40 s).
	etcdData := filepath.Join(workDir, "etcd-data")
	if err := os.RemoveAll(etcdData); err != nil {
		return nil, fmt.Errorf("localcluster: removing old etcd data: %w", err)
	}

	ports, err := opts.Ports.withFree()
	if err != nil {
		return nil, err
	}
	pki, err := newPKI(filepath.Join(workDir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	server := "https://127.0.0.1:" + strconv.Itoa(ports.APIServer)
	kubeconfigs := map[string]*keyPair{
		filepath.Join(workDir, KubeconfigFileName): pki.admin,
		kubeconfigPath(workDir, ControllerManager): pki.controllerMgr,
		kubeconfigPath(workDir, Scheduler):         pki.scheduler,
		kubeconfigPath(workDir, Kwok):              pki.kwok,
	}
	for path, user := range kubeconfigs {
		if err := writeKubeconfig(path, server, pki.ca.certPEM, user); err != nil {
			return nil, err
		}
	}
	kwokConfig := filepath.Join(workDir, "kwok.yaml")
	if err := os.WriteFile(kwokConfig, kwokStages, 0o644); err != nil {
		return nil, fmt.Errorf("localcluster: writing kwok stages: %w", err)
	}

	c := &Cluster{workDir: workDir, kubeconfig: filepath.Join(workDir, KubeconfigFileName)}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
		}
	}()
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = DefaultStartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	start := func(name string, args []string, env ...string) (*Process, error) {
		p, err := StartProcess(name, binaries[name], args, env, filepath.Join(workDir, "logs", name+".log"), opts.Detach)
		if err != nil {
			return nil, fmt.Errorf("localcluster: %w", err)
		}
		c.procs = append(c.procs, p)
		return p, c.writeState()
	}
	tlsConfig := &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}
	tlsConfig.RootCAs.AddCert(pki.ca.cert)
	httpsClient := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	httpClient := &http.Client{Timeout: 2 * time.Second}
	url := func(scheme string, port int, path string) string {
		return scheme + "://127.0.0.1:" + strconv.Itoa(port) + path
	}

	etcdClientURL := url("http", ports.Etcd, "")
	etcdPeerURL := url("http", ports.EtcdPeer, "")
	etcd, err := start(Etcd, []string{
		"--name=localcluster",
		"--data-dir=" + etcdData,
		"--listen-client-urls=" + etcdClientURL,
		"--advertise-client-urls=" + etcdClientURL,
		"--listen-peer-urls=" + etcdPeerURL,
		"--initial-advertise-peer-urls=" + etcdPeerURL,
		"--initial-cluster=localcluster=" + etcdPeerURL,
		// The data is thrown away after the test; fsync only slows every write down.
		"--unsafe-no-fsync=true",
	})
	if err != nil {
		return nil, err
	}
	if err := waitFor(ctx, etcd, "healthy", getOK(httpClient, url("http", ports.Etcd, "/health"))); err != nil {
		return nil, err
	}

	apiserver, err := start(APIServer, []string{
		"--etcd-servers=" + etcdClientURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports.APIServer),
		// The default reconciler refuses a loopback address for the kubernetes Service endpoints.
		"--endpoint-reconciler-type=none",
		"--tls-cert-file=" + pki.path("serving.crt"),
		"--tls-private-key-file=" + pki.path("serving.key"),
		"--client-ca-file=" + pki.path("ca.crt"),
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pki.path("sa.pub"),
		"--service-account-signing-key-file=" + pki.path("sa.key"),
		// Without a front-proxy CA the apiserver publishes no requestheader settings, and the controller
		// manager and scheduler log errors about the missing CA forever.
		"--requestheader-client-ca-file=" + pki.path("front-proxy-ca.crt"),
		"--requestheader-allowed-names=" + frontProxyClientName,
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-username-headers=X-Remote-User",
		"--proxy-client-cert-file=" + pki.path("front-proxy.crt"),
		"--proxy-client-key-file=" + pki.path("front-proxy.key"),
	})
	if err != nil {
		return nil, err
	}
	adminCert, err := tls.X509KeyPair(pki.admin.certPEM, pki.admin.keyPEM)
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	adminTLS := tlsConfig.Clone()
	adminTLS.Certificates = []tls.Certificate{adminCert}
	adminClient := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: adminTLS}}
	if err := waitFor(ctx, apiserver, "ready", getOK(adminClient, server+"/readyz")); err != nil {
		return nil, err
	}

	// The rest only need the apiserver: start them together and then wait for each.
	kcmKubeconfig := kubeconfigPath(workDir, ControllerManager)
	controllerManager, err := start(ControllerManager, []string{
		"--kubeconfig=" + kcmKubeconfig,
		"--authentication-kubeconfig=" + kcmKubeconfig,
		"--authorization-kubeconfig=" + kcmKubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports.ControllerManager),
		"--tls-cert-file=" + pki.path("serving.crt"),
		"--tls-private-key-file=" + pki.path("serving.key"),
		"--leader-elect=false",
		// Every controller with its own service account, as in a real cluster, so RBAC applies to each.
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + pki.path("sa.key"),
		"--root-ca-file=" + pki.path("ca.crt"),
		// Tests create many pods at once; the defaults (20/30) would pace ReplicaSets.
		"--kube-api-qps=100",
		"--kube-api-burst=200",
	})
	if err != nil {
		return nil, err
	}
	schedKubeconfig := kubeconfigPath(workDir, Scheduler)
	scheduler, err := start(Scheduler, []string{
		"--kubeconfig=" + schedKubeconfig,
		"--authentication-kubeconfig=" + schedKubeconfig,
		"--authorization-kubeconfig=" + schedKubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports.Scheduler),
		"--tls-cert-file=" + pki.path("serving.crt"),
		"--tls-private-key-file=" + pki.path("serving.key"),
		"--leader-elect=false",
	})
	if err != nil {
		return nil, err
	}
	kwok, err := start(Kwok, []string{
		"--kubeconfig=" + kubeconfigPath(workDir, Kwok),
		"--config=" + kwokConfig,
		// Flags, not a KwokConfiguration document: in v0.8.0 such a document turns off the option defaults.
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=" + KwokNodeAnnotationValue,
		"--server-address=127.0.0.1:" + strconv.Itoa(ports.Kwok),
		"--node-lease-duration-seconds=" + strconv.Itoa(kwokLeaseSeconds),
		"--cidr=" + podCIDR,
	},
		// kwok also loads $KWOK_WORKDIR/kwok.yaml (default ~/.kwok); keep a user's file out of the cluster.
		"KWOK_WORKDIR="+filepath.Join(workDir, "kwok"),
	)
	if err != nil {
		return nil, err
	}

	if err := waitFor(ctx, controllerManager, "healthy", getOK(httpsClient, url("https", ports.ControllerManager, "/healthz"))); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, scheduler, "ready", getOK(httpsClient, url("https", ports.Scheduler, "/readyz"))); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, kwok, "healthy", getOK(httpClient, url("http", ports.Kwok, "/healthz"))); err != nil {
		return nil, err
	}

	// The controller manager reports healthy about 5 s before its controllers run; pods in namespace
	// default need its ServiceAccount and the root CA ConfigMap.
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	if err := waitFor(ctx, controllerManager, "running its controllers (default ServiceAccount and kube-root-ca.crt ConfigMap)", func(ctx context.Context) error {
		if _, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return err
		}
		_, err := client.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	return c, nil
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
	return &Cluster{workDir: workDir, kubeconfig: s.Kubeconfig, procs: s.Processes}, nil
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

// Stop stops the recorded processes in reverse start order (SIGTERM, then SIGKILL after a grace
// period) and waits until they are gone. It signals only the recorded PIDs, and only while they still
// belong to the process that was started. Once all are gone it removes the state file; stopping a
// stopped cluster does nothing.
func (c *Cluster) Stop() error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		if err := c.procs[i].Stop(stopGrace); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("localcluster: %w", errors.Join(errs...))
	}
	if err := os.Remove(filepath.Join(c.workDir, StateFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("localcluster: %w", err)
	}
	return nil
}

// writeState records the processes started so far; written after each start, so that a start that
// fails half-way (or a CLI killed during it) still leaves a state file that Stop can use.
func (c *Cluster) writeState() error {
	data, err := json.MarshalIndent(state{Kubeconfig: c.kubeconfig, Processes: c.procs}, "", "  ")
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
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
		}
		return nil
	}
}

func kubeconfigPath(workDir, component string) string {
	return filepath.Join(workDir, "pki", component+".kubeconfig")
}

func writeKubeconfig(path, server string, caPEM []byte, user *keyPair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["localcluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["localcluster"] = &clientcmdapi.AuthInfo{ClientCertificateData: user.certPEM, ClientKeyData: user.keyPEM}
	cfg.Contexts["localcluster"] = &clientcmdapi.Context{Cluster: "localcluster", AuthInfo: "localcluster"}
	cfg.CurrentContext = "localcluster"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("localcluster: writing kubeconfig: %w", err)
	}
	return nil
}

// withFree returns p with every zero port replaced by a free port on 127.0.0.1. All listeners stay
// open until every port is chosen, so no port is handed out twice.
func (p Ports) withFree() (Ports, error) {
	for _, port := range []*int{&p.Etcd, &p.EtcdPeer, &p.APIServer, &p.ControllerManager, &p.Scheduler, &p.Kwok} {
		if *port != 0 {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return p, fmt.Errorf("localcluster: finding a free port: %w", err)
		}
		defer l.Close()
		*port = l.Addr().(*net.TCPAddr).Port
	}
	return p, nil
}

// DefaultBinDir returns $LOCALCLUSTER_BIN_DIR, or else bin/k8s in the repository that contains the
// working directory (where `make k8s-binaries` puts the binaries).
func DefaultBinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin", "k8s"), nil
}

// DefaultSchedulerBinary returns $LOCALCLUSTER_SCHEDULER, or else bin/kube-scheduler in the
// repository that contains the working directory (where `make bin/kube-scheduler` puts it).
func DefaultSchedulerBinary() (string, error) {
	if path := os.Getenv(SchedulerBinaryEnv); path != "" {
		return path, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin", "kube-scheduler"), nil
}

// RepoRoot walks up from the working directory (a package directory under `go test`) to go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("localcluster: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("localcluster: no go.mod above the working directory; set %s and %s", BinDirEnv, SchedulerBinaryEnv)
		}
		dir = parent
	}
}
