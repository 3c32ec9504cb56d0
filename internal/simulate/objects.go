package simulate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	goruntime "runtime"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
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

// decodeDocument decodes one document: an object, or a List of them. A List in block style, as
// `manager snapshot` and kubectl write one, is decoded item by item on every core (a snapshot of
// a large cluster is one List of tens of MB); any other document, and a List whose items do not
// all decode that way, is decoded whole, which reports its errors.
func decodeDocument(doc []byte) ([]runtime.Object, error) {
	if items, ok := blockListItems(doc); ok {
		if objs, err := decodeItems(items); err == nil {
			return objs, nil
		}
	}
	return decodeWhole(doc)
}

// decodeWhole decodes one document, an object or a List of them, in one piece.
func decodeWhole(doc []byte) ([]runtime.Object, error) {
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

// blockListItems splits a v1 List in block style into its items, each a YAML document of its
// own: the lines of the item from its "- " on, less the two columns of the item's indentation,
// which leaves every line where it was relative to the others. It tells whether doc is such a
// List: its lines at the first column are the keys apiVersion: v1, kind: List, items: and
// metadata:, each once, and the items' "- "; each item is a block mapping whose first key is on
// its "- " line, and every other line of an item is blank or indented by two columns at least.
// Anything else (comments, flow style, items indented under items:, an item that starts with
// an anchor, a tag or a quoted key, CRLF line ends) is not, and the document is decoded whole.
func blockListItems(doc []byte) ([][]byte, bool) {
	var items [][]byte
	var item []byte
	seen := map[string]bool{}
	inItems, inMetadata := false, false
	for rest := doc; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		switch {
		case bytes.IndexByte(line, '\r') >= 0:
			return nil, false
		case len(bytes.Trim(line, " ")) == 0:
			if item != nil {
				item = append(item, '\n')
			}
			continue
		case line[0] == ' ':
			switch {
			case inMetadata:
			case item != nil && len(line) > 2 && line[1] == ' ':
				item = append(append(item, line[2:]...), '\n')
			default:
				return nil, false
			}
			continue
		case len(line) > 2 && line[0] == '-' && line[1] == ' ':
			if !inItems || !isLetter(line[2]) {
				return nil, false
			}
			if item != nil {
				items = append(items, item)
			}
			item = append([]byte(nil), line[2:]...)
			item = append(item, '\n')
			continue
		}
		if item != nil {
			items, item = append(items, item), nil
		}
		key := string(bytes.TrimRight(line, " "))
		inItems, inMetadata = key == "items:", key == "metadata:"
		switch key {
		case "apiVersion: v1", "kind: List", "items:", "items: []", "metadata:", "metadata: {}":
		default:
			return nil, false
		}
		name, _, _ := strings.Cut(key, ":")
		if seen[name] {
			return nil, false
		}
		seen[name] = true
	}
	if item != nil {
		items = append(items, item)
	}
	return items, seen["apiVersion"] && seen["kind"] && seen["items"]
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// decodeItems decodes each of the items of a List, on every core, in their order.
func decodeItems(items [][]byte) ([]runtime.Object, error) {
	out := make([]runtime.Object, len(items))
	errs := make([]error, len(items))
	workqueue.ParallelizeUntil(context.Background(), goruntime.GOMAXPROCS(0), len(items), func(i int) {
		data, err := yaml.YAMLToJSON(items[i])
		if err == nil {
			out[i], err = decodeObject(data)
		}
		errs[i] = err
	}, workqueue.WithChunkSize(64))
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func decodeObject(data []byte) (runtime.Object, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	return obj, err
}

// workloadKinds are the kinds a workload file may hold.
var workloadKinds = "Pods, PodGroups, Deployments, ReplicaSets, StatefulSets and Jobs"
