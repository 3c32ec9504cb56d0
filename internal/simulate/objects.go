package simulate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Cluster is what scheduling reads of a cluster: the objects of a snapshot.
type Cluster struct {
	// Objects are the snapshot's objects, typed by client-go's scheme, in the file's order.
	Objects []runtime.Object
}

// Nodes are the cluster's nodes, sorted by name.
func (c *Cluster) Nodes() []*corev1.Node {
	var out []*corev1.Node
	for _, o := range c.Objects {
		if n, ok := o.(*corev1.Node); ok {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// BoundPods are the pods the cluster runs on its nodes: bound and not terminated.
func (c *Cluster) BoundPods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, o := range c.Objects {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" && !terminated(p) {
			out = append(out, p)
		}
	}
	return out
}

// PendingPods are the cluster's pods that wait for one of schedulerNames, in the file's order.
// They are the cluster's own objects, not copies: Run does not change a workload's pods, and a
// copy of each pod of a large snapshot would only add to the simulation's memory.
func (c *Cluster) PendingPods(schedulerNames []string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, o := range c.Objects {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName == "" && !terminated(p) && slices.Contains(schedulerNames, p.Spec.SchedulerName) {
			out = append(out, p)
		}
	}
	return out
}

// objectsExceptPending are the cluster's objects without its unbound and terminated pods, which
// the simulated cluster starts with.
func (c *Cluster) objectsExceptPending() []runtime.Object {
	var out []runtime.Object
	for _, o := range c.Objects {
		if p, ok := o.(*corev1.Pod); ok && (p.Spec.NodeName == "" || terminated(p)) {
			continue
		}
		o = o.DeepCopyObject()
		// The scheduler's cache keys pods by UID; a hand-written snapshot may have none.
		if p, ok := o.(*corev1.Pod); ok && p.UID == "" {
			p.UID = types.UID("snapshot/" + p.Namespace + "/" + p.Name)
		}
		out = append(out, o)
	}
	return out
}

func terminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// ReadObjects decodes every object of a YAML or JSON stream of documents, where a document may
// be a v1 List (as `manager snapshot` and `kubectl get -o yaml` write), by client-go's scheme.
func ReadObjects(in io.Reader) ([]runtime.Object, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	var out []runtime.Object
	for n := 1; ; n++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			n--
			continue
		}
		objs, err := decodeDocument(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		out = append(out, objs...)
	}
}

// decodeDocument decodes one document: an object, or a List of them.
func decodeDocument(doc []byte) ([]runtime.Object, error) {
	data, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var list struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, err
	}
	if list.Kind == "null" || (list.Kind == "" && list.APIVersion == "") {
		return nil, nil
	}
	if list.APIVersion != "v1" || list.Kind != "List" {
		obj, err := decodeObject(data)
		if err != nil {
			return nil, err
		}
		return []runtime.Object{obj}, nil
	}
	out := make([]runtime.Object, 0, len(list.Items))
	for i, item := range list.Items {
		obj, err := decodeObject(item)
		if err != nil {
			return nil, fmt.Errorf("items[%d]: %w", i, err)
		}
		out = append(out, obj)
	}
	return out, nil
}

func decodeObject(data []byte) (runtime.Object, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	return obj, err
}

// workloadKinds are the kinds a workload file may hold.
var workloadKinds = "Pods, PodGroups, Deployments, ReplicaSets, StatefulSets and Jobs"
