// Package node is the real-node tier (make test-node): the operator installed the way users
// install it (`make deploy`, our image built by `make image`) on a local cluster with one real node
// (kubelet, containerd, runc, a CNI bridge, kube-proxy: internal/localcluster's real-node mode),
// where the operator and every scheduler it runs are containers, beside kwok nodes that carry the
// workload pods. It checks what only a kubelet decides: the image, its user and entrypoint, the
// mounts and tokens, probes, restarts, image pull errors and crash loops, Services, Pod Security.
//
// It needs root; without root it prints one line and passes. After the tier it asserts that the
// host is as it was: no process, mount, link, iptables chain or sysctl of the cluster remains.
package node

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
)

const (
	// namespace and the names below are those of config/default.
	namespace          = operatorenv.Namespace
	operatorDeployment = operatorenv.OperatorDeployment
	operatorContainer  = "manager"
	schedulerImageEnv  = "RELATED_IMAGE_SCHEDULER"

	// image is IMG of `make image`; the tier also packs the same binaries as imageV2 (an upgrade
	// that works) and imageCrash (a scheduler that exits at once). imageMissing is on no node and
	// its registry is a closed port on 127.0.0.1, so pulling it fails without leaving the machine.
	imageV2      = "scheduler-profile-operator:v2"
	imageCrash   = "scheduler-profile-operator:crash"
	imageMissing = "127.0.0.1:9/scheduler-profile-operator:missing"

	// testLabel marks the workload pods of a test.
	testLabel = "node.schedops.io/test"

	// The release that TestReleaseOnTheRealNode installs, and the files of make release it reads.
	releaseVersion  = "0.1.0"
	releaseIMG      = "registry.example/scheduler-profile-operator:v0.1.0"
	releaseImageTar = "scheduler-profile-operator-image.tar"
	releaseInstall  = "install.yaml"
)

// operatorArgs are added to the operator's: rollouts that fail are judged within seconds rather
// than the defaults' minutes.
var operatorArgs = []string{
	"--rollout-start-error-timeout=20s",
	"--rollout-crash-loop-restarts=1",
	"--rollout-deadline=2m",
}

var (
	cluster *localcluster.Cluster
	// workDir holds the cluster and the test's images.
	workDir string
	k8s     client.Client
	cfg     *rest.Config
	paths   operatorenv.Paths
	// img is the image `make image` built, imageID its ID (the digest of its config).
	img, imageID string
	// releaseDir is make release's output, whose image the node holds.
	releaseDir string
	// kubectl is the kubectl of bin/k8s, run with the cluster's admin kubeconfig.
	kubectl string
	// realNode is the name of the real node.
	realNode string
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	if os.Geteuid() != 0 {
		fmt.Println("test-node: skipped: the real node (kubelet, containerd, a bridge, iptables rules) needs root; run `make test-node` as root")
		os.Exit(0)
	}
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) (code int) {
	// A run killed before its Stop (a timeout, a session that ended) leaves its node on the host.
	recovered, err := localcluster.RecoverStaleNodes()
	if err != nil {
		fmt.Fprintf(os.Stderr, "test-node: %v\n", err)
		return 1
	}
	for _, dir := range recovered {
		fmt.Printf("test-node: undid the real node a killed run left (cluster in %s)\n", dir)
	}
	before, err := localcluster.SnapshotHost()
	if err != nil {
		fmt.Fprintf(os.Stderr, "test-node: snapshot of the host: %v\n", err)
		return 1
	}
	defer func() {
		if cluster != nil {
			if err := cluster.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "test-node: stopping the cluster: %v\n", err)
				code = 1
			}
		}
		after, err := localcluster.SnapshotHost()
		if err != nil {
			fmt.Fprintf(os.Stderr, "test-node: snapshot of the host: %v\n", err)
			code = 1
			return
		}
		if left := before.DiffIn(after, workDir); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "test-node: the tier left on the host:\n\t%s\n", strings.Join(left, "\n\t"))
			code = 1
			return
		}
		fmt.Println("test-node: the host is as before the tier (processes, mounts, links, iptables, sysctls)")
		if code == 0 {
			_ = os.RemoveAll(workDir)
		} else {
			fmt.Fprintf(os.Stderr, "test-node: logs of the cluster in %s\n", filepath.Join(workDir, "cluster", "logs"))
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := setUp(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "test-node: set-up failed: %v\n", err)
		return 1
	}
	return m.Run()
}

func setUp(ctx context.Context) error {
	var err error
	if paths, err = operatorenv.FindPaths(); err != nil {
		return err
	}
	img = envOr("IMG", "scheduler-profile-operator:dev")
	imageTar := envOr("IMAGE_TAR", filepath.Join(paths.Root, "bin", "image.tar"))
	if imageID, err = tarballImageID(imageTar); err != nil {
		return err
	}
	kubectl = filepath.Join(paths.BinDir, "kubectl")
	if workDir, err = os.MkdirTemp("", "spo-node-"); err != nil {
		return err
	}
	images, err := testImages(ctx, imageTar, workDir)
	if err != nil {
		return err
	}
	if releaseDir, err = makeRelease(ctx, workDir); err != nil {
		return err
	}
	images = append(images, filepath.Join(releaseDir, releaseImageTar))
	start := time.Now()
	cluster, err = localcluster.Start(ctx, localcluster.Options{
		BinDir: paths.BinDir, SchedulerBinary: paths.Scheduler, WorkDir: filepath.Join(workDir, "cluster"),
		RealNode: &localcluster.RealNodeOptions{
			Images:       append([]string{imageTar, os.Getenv("PAUSE_IMAGE_TAR")}, images...),
			SandboxImage: os.Getenv("PAUSE_IMAGE"),
		},
	})
	if err != nil {
		return err
	}
	node, _ := cluster.RealNode()
	realNode = node.Name
	fmt.Printf("test-node: local cluster with real node %s (%s on bridge %s) started in %s, the node Ready %s after its kubelet started (%s)\n",
		node.Name, node.IP, node.Bridge, time.Since(start).Round(time.Millisecond), node.ReadyAfterKubeletStart.Round(time.Millisecond), workDir)
	if cfg, err = cluster.RESTConfig(); err != nil {
		return err
	}
	if k8s, err = operatorenv.Client(cluster); err != nil {
		return err
	}
	if err := createKwokNodes(ctx); err != nil {
		return err
	}
	start = time.Now()
	made, err := deploy(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("test-node: make deploy returned, the operator available and its webhook answering, in %s; with the tests' flags rolled out in %s\n",
		made.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return nil
}

// makeRelease runs `make release` for releaseIMG into dir/dist, as a release is made, and returns
// that directory. The release's image is packed from a tarball of its own: make image's, which
// the other tests run, keeps its tag.
func makeRelease(ctx context.Context, dir string) (string, error) {
	dist := filepath.Join(dir, "dist")
	cmd := exec.CommandContext(ctx, "make", "-s", "-C", paths.Root, "release", "VERSION="+releaseVersion, "IMG="+releaseIMG,
		"IMAGE_TAR="+filepath.Join(dir, "release-image.tar"), "DIST="+dist)
	// Not the settings of the make that runs this tier (its jobs, its command line's variables).
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MAKELEVEL=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("make release: %w\n%s", err, out)
	}
	return dist, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// testImages makes the images of the tests in dir: imageV2 and the bundle's image are the image of
// `make image` under other names (same config and layers, so the same image ID); imageCrash is
// packed by the same tool with a scheduler that exits at once.
func testImages(ctx context.Context, imageTar, dir string) ([]string, error) {
	bundleImage, err := csvImage()
	if err != nil {
		return nil, err
	}
	var tars []string
	for _, tag := range []string{imageV2, bundleImage} {
		out := filepath.Join(dir, strings.NewReplacer(":", "_", "/", "_").Replace(tag)+".tar")
		if err := retag(imageTar, out, tag); err != nil {
			return nil, err
		}
		tars = append(tars, out)
	}
	crash := filepath.Join(dir, "crash")
	build := exec.CommandContext(ctx, "go", "build", "-o", crash, "./crash")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the crash binary: %w\n%s", err, out)
	}
	out := filepath.Join(dir, "crash.tar")
	tool := envOr("IMAGE_TOOL", filepath.Join(paths.Root, "bin", "image"))
	cmd := exec.CommandContext(ctx, tool, "--output", out, "--tag", imageCrash, "--entrypoint", "/manager",
		"--file", "/manager="+crash, "--file", "/kube-scheduler="+crash)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("packing %s: %w\n%s", imageCrash, err, b)
	}
	return append(tars, out), nil
}

// retag copies an image tarball (`docker save` layout) to dst with its one tag replaced by tag.
func retag(src, dst, tag string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	tr, tw := tar.NewReader(in), tar.NewWriter(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return errors.Join(err, f.Close())
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return errors.Join(err, f.Close())
		}
		if hdr.Name == "manifest.json" {
			var manifest []map[string]any
			if err := json.Unmarshal(body, &manifest); err != nil || len(manifest) != 1 {
				return errors.Join(fmt.Errorf("manifest.json of %s: %v", src, err), f.Close())
			}
			manifest[0]["RepoTags"] = []string{tag}
			if body, err = json.Marshal(manifest); err != nil {
				return errors.Join(err, f.Close())
			}
			hdr.Size = int64(len(body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return errors.Join(err, f.Close())
		}
		if _, err := tw.Write(body); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	return errors.Join(tw.Close(), f.Close())
}

// createKwokNodes creates four kwok nodes in two zones, tainted and labelled with
// operatorenv.KwokNodeKey (workload pods tolerate and select it; the operator's pods do not), two
// of them in pool batch (for the batch-pool sample).
func createKwokNodes(ctx context.Context) error {
	var nodes []*corev1.Node
	for i := range 4 {
		labels := map[string]string{corev1.LabelTopologyZone: fmt.Sprintf("zone-%c", 'a'+i%2)}
		if i < 2 {
			labels["pool"] = "batch"
		}
		nodes = append(nodes, localcluster.FakeNode(fmt.Sprintf("kwok-%d", i), labels, nil))
	}
	operatorenv.MarkKwok(nodes...)
	return cluster.CreateNodes(ctx, nodes)
}

// deploy installs the operator as a user does (`make deploy IMG=...`) with operatorArgs added, and
// waits until it is available.
func deploy(ctx context.Context) (time.Duration, error) {
	return operatorenv.Deploy(ctx, k8s, cluster, paths, img, operatorArgs...)
}

// waitOperator waits until the operator's Deployment has observed generation and its one pod is
// available on the new template.
func waitOperator(ctx context.Context, generation int64, timeout time.Duration) error {
	return operatorenv.WaitOperator(ctx, k8s, cluster, paths, generation, timeout)
}

// applyKubectl runs `kubectl apply` with args and stdin and fails the test if it fails. An apply
// that the apiserver could not have reviewed by the operator's webhook (its Service's kube-proxy
// rule not programmed yet, or no answer within the webhook's 5 s timeout, as on a 2-core machine
// that runs the other lane's tiers meanwhile) is tried again for up to webhookRetries, a second
// apart, each attempt logged: apply is idempotent, and what a test checks is what follows it. A
// refusal by the webhook is never tried again.
func applyKubectl(t *testing.T, stdin string, args ...string) {
	t.Helper()
	args = append([]string{"apply"}, args...)
	deadline := time.Now().Add(webhookRetries)
	for attempt := 1; ; attempt++ {
		start := time.Now()
		out, err := runKubectl(t, stdin, args...)
		if err == nil {
			return
		}
		if !webhookUnreached(out) || time.Now().After(deadline) {
			t.Fatalf("kubectl %s (attempt %d): %v\n%s", strings.Join(args, " "), attempt, err, out)
		}
		t.Logf("kubectl %s, attempt %d, failed after %s, tried again: %s", strings.Join(args, " "), attempt, time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
		time.Sleep(time.Second)
	}
}

// webhookRetries is how long applyKubectl tries again an apply that the webhook did not review.
const webhookRetries = time.Minute

// webhookUnreached reports whether kubectl's output says that the apiserver could not call the
// webhook, or got no answer in time: the kube-proxy rule of its Service not programmed yet ("no
// route to host"), or no answer within the webhook's timeout.
func webhookUnreached(out string) bool {
	if !strings.Contains(out, "failed calling webhook") {
		return false
	}
	for _, cause := range []string{"context deadline exceeded", "Client.Timeout", "no route to host", "connection refused"} {
		if strings.Contains(out, cause) {
			return true
		}
	}
	return false
}

// runKubectl runs kubectl with the admin kubeconfig and stdin.
func runKubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), kubectl, append([]string{"--kubeconfig", cluster.Kubeconfig()}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// realNodePods returns the pods in the operator namespace that match the labels, failing the test
// unless each runs on the real node.
func realNodePods(t *testing.T, labels map[string]string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := k8s.List(t.Context(), &pods, client.InNamespace(namespace), client.MatchingLabels(labels)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != realNode {
			t.Errorf("Pod %s runs on %q, want the real node %s", p.Name, p.Spec.NodeName, realNode)
		}
	}
	return pods.Items
}
