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
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
)

const (
	// namespace and the names below are those of config/default.
	namespace          = "scheduler-profile-operator-system"
	operatorDeployment = "scheduler-profile-operator-controller-manager"
	operatorContainer  = "manager"
	schedulerImageEnv  = "RELATED_IMAGE_SCHEDULER"

	// image is IMG of `make image`; the tier also packs the same binaries as imageV2 (an upgrade
	// that works) and imageCrash (a scheduler that exits at once). imageMissing is on no node and
	// its registry is a closed port on 127.0.0.1, so pulling it fails without leaving the machine.
	imageV2      = "scheduler-profile-operator:v2"
	imageCrash   = "scheduler-profile-operator:crash"
	imageMissing = "127.0.0.1:9/scheduler-profile-operator:missing"

	// kwokTaint keeps the operator's and the schedulers' pods off the kwok nodes (where no
	// container runs); workload pods tolerate it, and select the kwok nodes by the label of the
	// same key.
	kwokTaint = "node.schedops.io/kwok"
	// testLabel marks the workload pods of a test.
	testLabel = "node.schedops.io/test"
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
	images, err := testImages(ctx, workDir)
	if err != nil {
		return err
	}
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
	if err := deploy(ctx); err != nil {
		return err
	}
	fmt.Printf("test-node: operator installed with make deploy and available in %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// testImages packs the images of the upgrade tests with the same tool as `make image`: imageV2 of
// the same binaries, imageCrash with a scheduler that exits at once.
func testImages(ctx context.Context, dir string) ([]string, error) {
	tool := envOr("IMAGE_TOOL", filepath.Join(paths.Root, "bin", "image"))
	crash := filepath.Join(dir, "crash")
	build := exec.CommandContext(ctx, "go", "build", "-o", crash, "./crash")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the crash binary: %w\n%s", err, out)
	}
	bin := func(name string) string { return filepath.Join(paths.Root, "bin", name) }
	var tars []string
	for _, im := range []struct{ tag, manager, scheduler string }{
		{imageV2, bin("manager"), bin("kube-scheduler")},
		{imageCrash, crash, crash},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(im.tag, ":", "_")+".tar")
		cmd := exec.CommandContext(ctx, tool, "--output", out, "--tag", im.tag, "--entrypoint", "/manager",
			"--file", "/manager="+im.manager, "--file", "/kube-scheduler="+im.scheduler)
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("packing %s: %w\n%s", im.tag, err, b)
		}
		tars = append(tars, out)
	}
	return tars, nil
}

// createKwokNodes creates four tainted kwok nodes in two zones, two of them in pool batch (for the
// batch-pool sample).
func createKwokNodes(ctx context.Context) error {
	var nodes []*corev1.Node
	for i := range 4 {
		labels := map[string]string{corev1.LabelTopologyZone: fmt.Sprintf("zone-%c", 'a'+i%2)}
		if i < 2 {
			labels["pool"] = "batch"
		}
		labels[kwokTaint] = "true"
		n := localcluster.FakeNode(fmt.Sprintf("kwok-%d", i), labels, nil)
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: kwokTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule})
		nodes = append(nodes, n)
	}
	return cluster.CreateNodes(ctx, nodes)
}

// deploy installs the operator as a user does: `make deploy IMG=...` with the cluster's
// kubeconfig, then adds operatorArgs to its Deployment and waits until it is available.
func deploy(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, "make", "-s", "deploy", "IMG="+img)
	cmd.Dir = paths.Root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig(), "PATH="+paths.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("make deploy: %w\n%s", err, out)
	}
	dep := &appsv1.Deployment{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: operatorDeployment}, dep); err != nil {
		return err
	}
	base := dep.DeepCopy()
	c := &dep.Spec.Template.Spec.Containers[0]
	c.Args = append(c.Args, operatorArgs...)
	// Patch writes the new generation into dep.
	if err := k8s.Patch(ctx, dep, client.MergeFrom(base)); err != nil {
		return err
	}
	return waitOperator(ctx, dep.Generation, 4*time.Minute)
}

// waitOperator waits until the operator's Deployment has observed generation and its one pod is
// available on the new template.
func waitOperator(ctx context.Context, generation int64, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		dep := &appsv1.Deployment{}
		err := k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: operatorDeployment}, dep)
		if err == nil {
			s := dep.Status
			var pods corev1.PodList
			if err := k8s.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels(operatorPodLabels)); err != nil {
				return err
			}
			// The old pod is gone too: it holds the leader lease and serves the webhook until then.
			if s.ObservedGeneration >= generation && s.UpdatedReplicas == 1 && s.AvailableReplicas == 1 && s.Replicas == 1 && len(pods.Items) == 1 {
				return nil
			}
			last = fmt.Sprintf("generation %d observed %d, replicas %d updated %d available %d, %d pods", dep.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, len(pods.Items))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the operator is not available: %s\n%s", last, operatorLogs())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// operatorLogs returns the last lines of the operator's log, for failures.
func operatorLogs() string {
	out, _ := exec.Command(kubectl, "--kubeconfig", cluster.Kubeconfig(), "-n", namespace, "logs", "deploy/"+operatorDeployment, "--tail=40").CombinedOutput()
	return "operator log:\n" + string(out)
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
