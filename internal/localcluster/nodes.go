package localcluster

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	// KwokNodeAnnotation with value KwokNodeAnnotationValue marks the nodes that kwok manages (makes
	// Ready, heartbeats, and runs pods on). Nodes without it are left alone.
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	// KwokNodeAnnotationValue is the value of KwokNodeAnnotation on the nodes kwok manages.
	KwokNodeAnnotationValue = "fake"

	// nodeReadyTimeout bounds CreateNodes when ctx has no earlier deadline; a node is usually Ready and
	// untainted within a few seconds (the controller manager's node monitor period is 5 s).
	nodeReadyTimeout = time.Minute
)

// FakeNode returns a node for kwok to manage, with the given labels (added to kubernetes.io/hostname,
// kubernetes.io/os and type=kwok) and capacity (also its allocatable; nil means 32 CPUs, 256Gi of
// memory and 110 pods).
func FakeNode(name string, labels map[string]string, capacity corev1.ResourceList) *corev1.Node {
	if capacity == nil {
		capacity = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("32"),
			corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
	}
	nodeLabels := map[string]string{
		corev1.LabelHostname: name,
		corev1.LabelOSStable: "linux",
		"type":               "kwok",
	}
	maps.Copy(nodeLabels, labels)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      nodeLabels,
			Annotations: map[string]string{KwokNodeAnnotation: KwokNodeAnnotationValue},
		},
		// kwok's node-initialize stage keeps a capacity and allocatable that are already set.
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity.DeepCopy()},
	}
}

// CreateNodes creates the nodes (which must carry the kwok annotation, as FakeNode's do) and waits
// until kwok has made each Ready and the controller manager has removed the
// node.kubernetes.io/not-ready taint, so that pods can be scheduled onto them.
func (c *Cluster) CreateNodes(ctx context.Context, nodes []*corev1.Node) error {
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	for _, node := range nodes {
		if node.Annotations[KwokNodeAnnotation] != KwokNodeAnnotationValue {
			return fmt.Errorf("localcluster: node %s lacks the annotation %s=%s, so kwok would never make it Ready",
				node.Name, KwokNodeAnnotation, KwokNodeAnnotationValue)
		}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("localcluster: creating node %s: %w", node.Name, err)
		}
	}

	ctx, cancel := context.WithTimeout(ctx, nodeReadyTimeout)
	defer cancel()
	for _, node := range nodes {
		if err := c.waitSchedulable(ctx, client, node.Name); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) waitSchedulable(ctx context.Context, client kubernetes.Interface, name string) error {
	for {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		var last string
		switch {
		case err != nil:
			last = err.Error()
		case schedulable(n):
			return nil
		default:
			last = fmt.Sprintf("Ready condition %+v, taints %v", readyCondition(n), n.Spec.Taints)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("localcluster: node %s not Ready and untainted in time (%w): %s; see the kwok and kube-controller-manager logs in %s",
				name, context.Cause(ctx), last, filepath.Join(c.workDir, "logs"))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// schedulable reports whether n is Ready and free of the taint that keeps pods off new nodes.
func schedulable(n *corev1.Node) bool {
	if cond := readyCondition(n); cond == nil || cond.Status != corev1.ConditionTrue {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady {
			return false
		}
	}
	return true
}
