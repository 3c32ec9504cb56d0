// Package cluster is the envtest control plane that the benchmarks under hack/bench run on (etcd
// and kube-apiserver from bin/k8s), with the fake nodes and pods they create and the scheduler
// processes they start. Benchmark code, not part of the product.
package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

const (
	// Namespace holds the benchmarks' pods.
	Namespace = metav1.NamespaceDefault
	// workers is how many creates run at once: enough to keep kube-apiserver and etcd busy on a
	// small machine.
	workers = 32
)

// images are on every node, so that the nodes in the schedulers' caches carry image lists as
// real nodes do (ImageLocality reads them).
var images = []string{"registry.k8s.io/pause:3.10", "example.com/app:1", "example.com/sidecar:1", "example.com/batch:1"}

// Node labels that the benchmark profiles select and prefer: every node is in Pool, every other
// one is a spot node.
const (
	PoolLabel      = "pool"
	Pool           = "bench"
	LifecycleLabel = "node.kubernetes.io/lifecycle"
	Spot           = "spot"
)

// Cluster is an envtest control plane.
type Cluster struct {
	env *envtest.Environment
	// Config reaches the apiserver as an administrator, without a client-side rate limit: the
	// benchmarks create thousands of objects.
	Config *rest.Config
	// Client is a client of Config.
	Client kubernetes.Interface
	// Kubeconfig is the path of an admin kubeconfig for the processes the benchmarks start.
	Kubeconfig string
}

// Start starts etcd and kube-apiserver from assets, installs the CRDs found in crdDirs, and
// writes the kubeconfig into dir. TaintNodesByCondition is off so that nodes created Ready are
// schedulable at once: no node lifecycle controller runs to lift the not-ready taint that it puts
// on every new node.
func Start(assets, dir string, crdDirs ...string) (*Cluster, error) {
	return StartWithWebhooks(assets, dir, nil, crdDirs...)
}

// StartWithWebhooks is Start with the webhook configurations of the manifests in webhookPaths
// installed, pointed at a local port with a CA of envtest's (Webhook).
func StartWithWebhooks(assets, dir string, webhookPaths []string, crdDirs ...string) (_ *Cluster, err error) {
	c := &Cluster{env: &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: crdDirs, ErrorIfCRDPathMissing: len(crdDirs) > 0,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: webhookPaths}}}
	apiserver := c.env.ControlPlane.GetAPIServer().Configure()
	apiserver.Append("disable-admission-plugins", "TaintNodesByCondition")
	// The benchmarks delete thousands of pods between runs; the default deletes them one by one.
	apiserver.Set("delete-collection-workers", "16")
	cfg, err := c.env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting etcd and kube-apiserver from %s: %w", assets, err)
	}
	defer func() {
		if err != nil {
			_ = c.env.Stop()
		}
	}()
	c.Config = rest.CopyConfig(cfg)
	c.Config.QPS = -1
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if c.Kubeconfig, err = filepath.Abs(filepath.Join(dir, "kubeconfig")); err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.Kubeconfig, c.env.KubeConfig, 0o600); err != nil {
		return nil, fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return c, nil
}

// Webhook is where the installed webhook configurations call: host, port and the directory of
// the serving certificate.
func (c *Cluster) Webhook() (host string, port int, certDir string) {
	w := &c.env.WebhookInstallOptions
	return w.LocalServingHost, w.LocalServingPort, w.LocalServingCertDir
}

// Stop stops kube-apiserver and etcd.
func (c *Cluster) Stop() {
	if err := c.env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: stopping etcd and kube-apiserver:", err)
	}
}

// CreateNodes creates n nodes made by Node.
func (c *Cluster) CreateNodes(ctx context.Context, n int) error {
	err := Parallel(ctx, n, func(ctx context.Context, i int) error {
		_, err := c.Client.CoreV1().Nodes().Create(ctx, Node(i), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("creating nodes: %w", err)
	}
	return nil
}

// CreatePods creates n pods made by pod(i).
func (c *Cluster) CreatePods(ctx context.Context, n int, pod func(i int) *corev1.Pod) error {
	err := Parallel(ctx, n, func(ctx context.Context, i int) error {
		_, err := c.Client.CoreV1().Pods(Namespace).Create(ctx, pod(i), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("creating pods: %w", err)
	}
	return nil
}

// Parallel runs do for 0..n-1 on a pool of goroutines and returns the first error.
func Parallel(ctx context.Context, n int, do func(context.Context, int) error) error {
	return ParallelN(ctx, workers, n, do)
}

// ParallelN is Parallel on a pool of size goroutines.
func ParallelN(ctx context.Context, size, n int, do func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	workqueue.ParallelizeUntil(ctx, size, n, func(i int) {
		if err := do(ctx, i); err != nil {
			cancel(err)
		}
	})
	return context.Cause(ctx)
}

// NodeName is the name of the i-th node.
func NodeName(i int) string { return fmt.Sprintf("node-%04d", i) }

// Node is a Ready node in one of three zones, in Pool, every other one a Spot node. Nodes take
// their status on create, as a kubelet registering does; no kubelet runs.
func Node(i int) *corev1.Node {
	name := NodeName(i)
	lifecycle := "on-demand"
	if i%2 == 0 {
		lifecycle = Spot
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("128Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			corev1.LabelHostname:     name,
			corev1.LabelOSStable:     "linux",
			corev1.LabelTopologyZone: fmt.Sprintf("zone-%c", 'a'+i%3),
			LifecycleLabel:           lifecycle,
			PoolLabel:                Pool,
		}},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
		},
	}
	for _, image := range images {
		node.Status.Images = append(node.Status.Images, corev1.ContainerImage{Names: []string{image}, SizeBytes: 50 << 20})
	}
	return node
}

// Pod is a pod of app that requests a little CPU and memory.
func Pod(name, app string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "app",
			Image: images[1],
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("256Mi"),
			}},
		}}},
	}
}

// WebhookCA is the CA that the installed webhook configurations trust for Webhook's certificate.
func (c *Cluster) WebhookCA() []byte {
	return c.env.WebhookInstallOptions.LocalServingCAData
}
