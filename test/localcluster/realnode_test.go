package localcluster_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
)

const (
	pauseImage = "localcluster.invalid/pause:1"
	probeImage = "localcluster.invalid/probe:1"
)

// TestRealNode starts a cluster with a real node (kubelet, kube-proxy, containerd), runs a pod from
// the pause image on it, runs a Job whose pod reaches the apiserver through the kubernetes Service,
// and reads that pod's log through the apiserver. Then it kills every process of the cluster, as
// the end of a session or a test timeout would, so that the containers, mounts, links and rules
// stay behind; RecoverStaleNodes, which left the running cluster alone, must find the node by its
// bridge and stop it from its state file, and the host must be as the test found it: no process,
// mount, link, iptables rule, nftables table, sysctl, cgroup or file left.
func TestRealNode(t *testing.T) {
	binDir, scheduler := realNodeBinaries(t)
	images := buildImages(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	before, err := localcluster.SnapshotHost()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	workDir := t.TempDir()
	c, err := localcluster.Start(ctx, localcluster.Options{
		BinDir: binDir, SchedulerBinary: scheduler, WorkDir: workDir,
		RealNode: &localcluster.RealNodeOptions{Images: images, SandboxImage: pauseImage},
	})
	if errors.Is(err, localcluster.ErrNeedsRoot) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if stopped {
			return
		}
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	node, _ := c.RealNode()
	t.Logf("cluster with real node %s (%s on %s, %s) started in %s; node Ready %s after the kubelet started",
		node.Name, node.IP, node.Bridge, node.Subnet, time.Since(began).Round(10*time.Millisecond), node.ReadyAfterKubeletStart.Round(10*time.Millisecond))

	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkKubernetesEndpoint(ctx, t, client, node.IP)
	runPausePod(ctx, t, client, node.Name)
	runProbeJob(ctx, t, client, node.Name)

	// The snapshot sees the running node, so that an empty diff after Stop means something.
	running, err := localcluster.SnapshotHost()
	if err != nil {
		t.Fatal(err)
	}
	changes := before.DiffIn(running, workDir)
	if !slices.Contains(changes, "+ link "+node.Bridge) {
		t.Errorf("the snapshot of the running node lacks its bridge %s: %v", node.Bridge, changes)
	}
	t.Logf("%d host changes while the node runs", len(changes))

	if recovered, err := localcluster.RecoverStaleNodes(); err != nil || len(recovered) > 0 {
		t.Fatalf("RecoverStaleNodes with the cluster running: recovered %v, error %v", recovered, err)
	}
	procs := c.Processes()
	stopped = true
	for _, p := range procs {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	eventually(ctx, t, 30*time.Second, "the cluster's processes gone after SIGKILL", func() error {
		for _, p := range procs {
			if p.Alive() {
				return fmt.Errorf("%s (pid %d) still runs", p.Name, p.PID)
			}
		}
		return nil
	})
	began = time.Now()
	recovered, err := localcluster.RecoverStaleNodes()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recovered, []string{workDir}) {
		t.Fatalf("RecoverStaleNodes recovered %v, want the killed cluster's %s", recovered, workDir)
	}
	t.Logf("the killed node recovered in %s", time.Since(began).Round(10*time.Millisecond))
	for _, p := range procs {
		if err := syscall.Kill(p.PID, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s: pid %d still exists after the recovery (kill -0: %v)", p.Name, p.PID, err)
		}
	}
	after, err := localcluster.SnapshotHost()
	if err != nil {
		t.Fatal(err)
	}
	if diff := before.DiffIn(after, workDir); len(diff) > 0 {
		t.Errorf("the host changed after the recovery:\n\t%s", strings.Join(diff, "\n\t"))
	}
}

// TestRealNodeFailedStart checks that a start that fails once the host is changed (an image
// tarball that containerd cannot import, after the bridge, the rules, the cgroups and containerd
// are there) stops what it started and leaves the host as it was.
func TestRealNodeFailedStart(t *testing.T) {
	binDir, scheduler := realNodeBinaries(t)
	bad := filepath.Join(t.TempDir(), "bad.tar")
	if err := os.WriteFile(bad, []byte("not a tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before, err := localcluster.SnapshotHost()
	if err != nil {
		t.Fatal(err)
	}
	workDir := t.TempDir()
	c, err := localcluster.Start(ctx, localcluster.Options{
		BinDir: binDir, SchedulerBinary: scheduler, WorkDir: workDir,
		RealNode: &localcluster.RealNodeOptions{Images: []string{bad}, SandboxImage: pauseImage},
	})
	if err == nil {
		_ = c.Stop()
		t.Fatal("Start imported a file that is not an image")
	}
	if !strings.Contains(err.Error(), "importing image "+bad) {
		t.Errorf("Start's error does not name the import: %v", err)
	}
	if _, err := os.Stat(filepath.Join(workDir, localcluster.StateFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state file is left after the failed start (stat: %v)", err)
	}
	after, err := localcluster.SnapshotHost()
	if err != nil {
		t.Fatal(err)
	}
	if diff := before.DiffIn(after, workDir); len(diff) > 0 {
		t.Errorf("the host changed after the failed start:\n\t%s", strings.Join(diff, "\n\t"))
	}
}

// realNodeBinaries skips the test without root and returns the binary directory and the scheduler.
// It first undoes a real node that a killed run left on the host, before the test's snapshot.
func realNodeBinaries(t *testing.T) (binDir, scheduler string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a real node needs root (kubelet, containerd, a bridge and iptables rules)")
	}
	recovered, err := localcluster.RecoverStaleNodes()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range recovered {
		t.Logf("undid the real node a killed run left (cluster in %s)", dir)
	}
	binDir, err = localcluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	scheduler, err = localcluster.DefaultSchedulerBinary()
	if err != nil {
		t.Fatal(err)
	}
	return binDir, scheduler
}

// checkKubernetesEndpoint checks that the apiserver advertises the bridge address as the
// kubernetes Service's endpoint, which pods can route to.
func checkKubernetesEndpoint(ctx context.Context, t *testing.T, client kubernetes.Interface, ip string) {
	eventually(ctx, t, 30*time.Second, "the kubernetes Service's endpoint on "+ip, func() error {
		list, err := client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=kubernetes",
		})
		if err != nil {
			return err
		}
		var addrs []string
		for _, slice := range list.Items {
			for _, ep := range slice.Endpoints {
				addrs = append(addrs, ep.Addresses...)
			}
		}
		if len(addrs) != 1 || addrs[0] != ip {
			return fmt.Errorf("endpoint addresses %v", addrs)
		}
		return nil
	})
}

// runPausePod runs a pod from the pause image on the node and waits until it is Ready.
func runPausePod(ctx context.Context, t *testing.T, client kubernetes.Interface, nodeName string) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pause", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{corev1.LabelHostname: nodeName},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "pause", Image: pauseImage, ImagePullPolicy: corev1.PullNever}},
		},
	}
	began := time.Now()
	if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, 2*time.Minute, "pod pause Ready on "+nodeName, func() error {
		p, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Spec.NodeName != nodeName || !podReady(p) {
			return fmt.Errorf("node %q, phase %s, conditions %+v, containers %+v", p.Spec.NodeName, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
		}
		return nil
	})
	t.Logf("pod Ready %s after create", time.Since(began).Round(10*time.Millisecond))
}

// runProbeJob runs a Job whose pod GETs the apiserver's /readyz through the kubernetes Service's
// ClusterIP (kube-proxy's rules, the bridge address) and waits until it Succeeded; its log is read
// through the apiserver, which fetches it from the kubelet.
func runProbeJob(ctx context.Context, t *testing.T, client kubernetes.Interface, nodeName string) {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: metav1.NamespaceDefault},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "probe"}},
				Spec: corev1.PodSpec{
					NodeSelector:  map[string]string{corev1.LabelHostname: nodeName},
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name: "probe", Image: probeImage, ImagePullPolicy: corev1.PullNever, Args: []string{"probe"},
					}},
				},
			},
		},
	}
	began := time.Now()
	if _, err := client.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, 2*time.Minute, "Job probe Succeeded", func() error {
		j, err := client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if j.Status.Failed > 0 {
			return errors.Join(errors.New("the probe failed"), probeLog(ctx, client))
		}
		if j.Status.Succeeded != 1 {
			return fmt.Errorf("job status %+v", j.Status)
		}
		return nil
	})
	t.Logf("Job reaching the apiserver through the kubernetes Service Succeeded %s after create", time.Since(began).Round(10*time.Millisecond))
	if err := probeLog(ctx, client); !strings.Contains(err.Error(), "readyz: 200") {
		t.Errorf("the probe's log (through the kubelet) lacks the apiserver's answer: %v", err)
	}
}

// probeLog returns the probe pod's log as an error, for messages.
func probeLog(ctx context.Context, client kubernetes.Interface) error {
	pods, err := client.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: "app=probe"})
	if err != nil || len(pods.Items) == 0 {
		return fmt.Errorf("no probe pod: %v", err)
	}
	data, err := client.CoreV1().Pods(metav1.NamespaceDefault).GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("reading the probe's log: %w", err)
	}
	return fmt.Errorf("probe log: %s", bytes.TrimSpace(data))
}

// imageProgram is the one binary of both test images: "pause" waits for SIGTERM and reaps
// children (a sandbox's pause process); "probe" GETs the apiserver's /readyz through the
// kubernetes Service with the pod's service-account token and exits 0 on 200.
const imageProgram = `package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "probe" {
		os.Exit(probe())
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			if pid, _ := syscall.Wait4(-1, nil, syscall.WNOHANG, nil); pid <= 0 {
				break
			}
		}
	}
}

func probe() int {
	const dir = "/var/run/secrets/kubernetes.io/serviceaccount/"
	ca, err := os.ReadFile(dir + "ca.crt")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	token, err := os.ReadFile(dir + "token")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")) + "/readyz"
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+string(token))
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("GET %s: readyz: %d %s\n", url, resp.StatusCode, body)
	if resp.StatusCode != http.StatusOK {
		return 1
	}
	return 0
}
`

// buildImages builds imageProgram as a static binary and packs it as the pause and the probe
// image, each a docker-save tarball of one layer (what `ctr images import` reads).
func buildImages(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"main.go": imageProgram, "go.mod": "module localcluster.invalid/image\n\ngo 1.24\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", "img", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the image program: %v\n%s", err, out)
	}
	binary, err := os.ReadFile(filepath.Join(dir, "img"))
	if err != nil {
		t.Fatal(err)
	}
	layer := tarLayer(t, "img", binary)
	var paths []string
	for ref, entrypoint := range map[string][]string{pauseImage: {"/img"}, probeImage: {"/img"}} {
		path := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(ref)+".tar")
		writeDockerArchive(t, path, ref, entrypoint, layer)
		paths = append(paths, path)
	}
	return paths
}

// tarLayer returns an uncompressed layer holding one executable file.
func tarLayer(t *testing.T, name string, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeDockerArchive writes a docker-save tarball: manifest.json, the config and the layer.
func writeDockerArchive(t *testing.T, path, ref string, entrypoint []string, layer []byte) {
	t.Helper()
	layerSum := sha256.Sum256(layer)
	diffID := "sha256:" + hex.EncodeToString(layerSum[:])
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH, "os": "linux",
		"config": map[string]any{"Entrypoint": entrypoint},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID}},
	})
	if err != nil {
		t.Fatal(err)
	}
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	layerName := hex.EncodeToString(layerSum[:]) + "/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{ref}, "Layers": []string{layerName}}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{configName, config}, {layerName, layer}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
