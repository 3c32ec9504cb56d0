package main

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
	// namespace holds the bound pods and the probe pods.
	namespace = metav1.NamespaceDefault
	// workers is how many creates run at once: enough to keep kube-apiserver and etcd busy on a
	// small machine.
	workers = 32
)

// images are on every node, so that the nodes in the schedulers' caches carry image lists as
// real nodes do (ImageLocality reads them).
var images = []string{"registry.k8s.io/pause:3.10", "example.com/app:1", "example.com/sidecar:1", "example.com/batch:1"}

// cluster is the envtest control plane that the schedulers run against.
type cluster struct {
	env *envtest.Environment
	// client has no client-side rate limit: the setup creates thousands of objects.
	client kubernetes.Interface
	// kubeconfig is the path of an admin kubeconfig for the schedulers.
	kubeconfig string
}

// startCluster starts etcd and kube-apiserver from assets and writes the kubeconfig into dir.
// TaintNodesByCondition is off so that nodes created Ready are schedulable at once: no node
// lifecycle controller runs to lift the not-ready taint that it puts on every new node.
func startCluster(assets, dir string) (_ *cluster, err error) {
	c := &cluster{env: &envtest.Environment{BinaryAssetsDirectory: assets}}
	c.env.ControlPlane.GetAPIServer().Configure().Append("disable-admission-plugins", "TaintNodesByCondition")
	cfg, err := c.env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting etcd and kube-apiserver from %s: %w", assets, err)
	}
	defer func() {
		if err != nil {
			_ = c.env.Stop()
		}
	}()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1
	if c.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.kubeconfig, err = filepath.Abs(filepath.Join(dir, "kubeconfig")); err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.kubeconfig, c.env.KubeConfig, 0o600); err != nil {
		return nil, fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return c, nil
}

// stop stops kube-apiserver and etcd.
func (c *cluster) stop() {
	if err := c.env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-memory: stopping etcd and kube-apiserver:", err)
	}
}

// populate creates the nodes, then the pods spread evenly over them with spec.nodeName set, so
// that every scheduler's cache holds them as it would running pods.
func populate(ctx context.Context, cs kubernetes.Interface, nodes, pods int) error {
	err := parallel(ctx, nodes, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().Nodes().Create(ctx, benchNode(i), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("creating nodes: %w", err)
	}
	err = parallel(ctx, pods, func(ctx context.Context, i int) error {
		pod := benchPod(fmt.Sprintf("pod-%05d", i), fmt.Sprintf("app-%d", i%100))
		pod.Spec.NodeName = nodeName(i % nodes)
		_, err := cs.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("creating bound pods: %w", err)
	}
	return nil
}

// parallel runs do for 0..n-1 on workers goroutines and returns the first error.
func parallel(ctx context.Context, n int, do func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	workqueue.ParallelizeUntil(ctx, workers, n, func(i int) {
		if err := do(ctx, i); err != nil {
			cancel(err)
		}
	})
	return context.Cause(ctx)
}

func nodeName(i int) string { return fmt.Sprintf("node-%04d", i) }

// benchNode is a Ready node in one of three zones, in the pool that the node-pool profiles
// select, every other one a spot node. Nodes take their status on create, as a kubelet
// registering does.
func benchNode(i int) *corev1.Node {
	name := nodeName(i)
	lifecycle := "on-demand"
	if i%2 == 0 {
		lifecycle = "spot"
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("128Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			corev1.LabelHostname:           name,
			corev1.LabelOSStable:           "linux",
			corev1.LabelTopologyZone:       fmt.Sprintf("zone-%c", 'a'+i%3),
			"node.kubernetes.io/lifecycle": lifecycle,
			"pool":                         "bench",
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

// benchPod is a pod of app that requests a little CPU and memory.
func benchPod(name, app string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
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
