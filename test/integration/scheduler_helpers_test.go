package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
)

// schedulerBinary returns the path of bin/kube-scheduler at the repository root. A missing
// binary fails the test instead of skipping it: the scheduler tests are the acceptance test of the
// plugins, and a skip would let `make test` pass without ever running them.
func schedulerBinary(t *testing.T) string {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatalf("Finding the repository root: %v", err)
	}
	path := filepath.Join(root, "bin", "kube-scheduler")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("The scheduler binary %s is missing (%v): run `make bin/kube-scheduler`", path, err)
	}
	return path
}

// writeKubeconfig writes a kubeconfig file for rc into dir, so that a separate process (the
// scheduler) reaches the envtest apiserver with the same identity as the tests. It mirrors what
// envtest does internally (controlplane.KubeConfigFromREST), which is not importable.
func writeKubeconfig(t *testing.T, rc *rest.Config, dir string) string {
	t.Helper()
	host, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatalf("Parsing the apiserver address %q: %v", rc.Host, err)
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
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatalf("Writing the kubeconfig: %v", err)
	}
	return path
}

// schedulerConfig renders a KubeSchedulerConfiguration with one profile, schedulerName, that
// enables NodePool (pool=a) and NodeLabelPreference (tier=spot, weight 10; plugin weight 2) on
// top of the default plugins. extraNodePoolArgs is appended inside NodePool's args, to inject
// a field that strict decoding must refuse. Leader election is off: one replica, and it must not
// touch the default kube-system/kube-scheduler lease.
func schedulerConfig(kubeconfig, schedulerName, extraNodePoolArgs string) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: %s
profiles:
- schedulerName: %s
  plugins:
    multiPoint:
      enabled:
      - name: NodePool
      - name: NodeLabelPreference
        weight: 2
  pluginConfig:
  - name: NodePool
    args: {nodeSelector: {matchLabels: {pool: a}}%s}
  - name: NodeLabelPreference
    args:
      preferences:
      - {key: tier, values: [spot], weight: 10}
`, strconv.Quote(kubeconfig), schedulerName, extraNodePoolArgs)
}

// writeFile writes content into dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatalf("Writing %s: %v", path, err)
	}
	return path
}

// schedulerProcess is a kube-scheduler started by startScheduler.
type schedulerProcess struct {
	// exited receives the result of Wait once the process has exited; whoever receives it puts
	// it back, so that every later reader sees it too.
	exited chan error
}

// checkRunning returns an error if the process has exited.
func (p *schedulerProcess) checkRunning() error {
	select {
	case err := <-p.exited:
		p.exited <- err
		return fmt.Errorf("kube-scheduler exited: %v", err)
	default:
		return nil
	}
}

// startScheduler runs the scheduler binary with configPath until the test ends and waits until it
// reports ready, which means its informers have synced (with leader election on, it may not hold
// the lease yet). Its output goes to a file that is printed when the test fails; the process is
// killed and reaped in t.Cleanup.
func startScheduler(t *testing.T, binary, configPath string) *schedulerProcess {
	t.Helper()
	dir := t.TempDir() // before the cleanups below, so that it is removed after them
	logPath := filepath.Join(dir, "kube-scheduler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("Creating the scheduler log: %v", err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if out, err := os.ReadFile(logPath); err == nil {
			t.Logf("kube-scheduler output (%s):\n%s", logPath, out)
		}
	})

	port := freePort(t)
	cmd := exec.Command(binary,
		"--config", configPath,
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(port),
		"--v", "2",
	)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("Starting %s: %v", binary, err)
	}
	proc := &schedulerProcess{exited: make(chan error, 1)}
	exited := proc.exited
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// Kill, then wait, so that no scheduler outlives its test and binds later tests' pods.
		_ = cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Errorf("kube-scheduler (pid %d) did not exit 30s after SIGKILL", cmd.Process.Pid)
		}
		logFile.Close()
	})

	readyz := fmt.Sprintf("https://127.0.0.1:%d/readyz", port)
	httpClient := &http.Client{
		Timeout: 2 * time.Second,
		// The scheduler serves a self-signed certificate; only the status code matters here.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec
	}
	defer httpClient.CloseIdleConnections()
	var last string
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := proc.checkRunning(); err != nil {
			return false, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, readyz, nil)
		if err != nil {
			return false, err
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		defer resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("Waiting for %s (last answer: %s): %v", readyz, last, err)
	}
	return proc
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago. Another process could
// take it before the scheduler binds it; the scheduler then exits and startScheduler says so.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// createReadyNode creates a Node with labels and the same allocatable resources as every other
// node of these tests, then makes it schedulable the way a kubelet and the node lifecycle
// controller would: a Ready condition, and without the not-ready taint that the
// TaintNodesByCondition admission plugin adds on creation (envtest runs no controller manager to
// remove it). The node is deleted when the test ends.
func createReadyNode(t *testing.T, ctx context.Context, c client.Client, name string, labels map[string]string) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := c.Create(ctx, node); err != nil {
		t.Fatalf("Creating node %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := client.IgnoreNotFound(c.Delete(context.Background(), node)); err != nil {
			t.Errorf("Deleting node %s: %v", name, err)
		}
	})

	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(nodeCPU),
		corev1.ResourceMemory: resource.MustParse(nodeMemory),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	now := metav1.Now()
	node.Status = corev1.NodeStatus{
		Capacity:    resources,
		Allocatable: resources,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "set by the integration test", LastHeartbeatTime: now, LastTransitionTime: now,
		}},
	}
	if err := c.Status().Update(ctx, node); err != nil {
		t.Fatalf("Setting the status of node %s: %v", name, err)
	}

	patch := client.MergeFrom(node.DeepCopy())
	node.Spec.Taints = nil
	if err := c.Patch(ctx, node, patch); err != nil {
		t.Fatalf("Removing the taints of node %s: %v", name, err)
	}
	if len(node.Spec.Taints) != 0 {
		t.Fatalf("Node %s still has taints %v", name, node.Spec.Taints)
	}
}

// createPod creates a pod for schedulerName with requests of podCPU and podMemory, and deletes
// it when the test ends. The pod is deleted with no grace period: no kubelet exists to confirm a
// graceful deletion of a bound pod, which would otherwise stay terminating.
func createPod(t *testing.T, ctx context.Context, c client.Client, namespace, name, schedulerName string, nodeSelector map[string]string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			SchedulerName: schedulerName,
			NodeSelector:  nodeSelector,
			Containers: []corev1.Container{{
				Name:  "pause",
				Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse(podCPU),
					corev1.ResourceMemory: resource.MustParse(podMemory),
				}},
			}},
		},
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatalf("Creating pod %s: %v", name, err)
	}
	t.Cleanup(func() {
		err := c.Delete(context.Background(), pod, client.GracePeriodSeconds(0))
		if client.IgnoreNotFound(err) != nil {
			t.Errorf("Deleting pod %s: %v", name, err)
		}
	})
	return pod
}

// podScheduledCondition returns the PodScheduled condition of pod, or nil.
func podScheduledCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodScheduled {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
