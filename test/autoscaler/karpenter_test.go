package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/internal/freeport"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// Karpenter, with its kwok cloud provider, is a process beside the cluster, configured as its
// Helm chart (kwok/charts) configures it: by environment variables. It reads no flag this suite
// needs, and refuses flags it does not know (--kubeconfig among them), so its kubeconfig is
// KUBECONFIG, which controller-runtime's config loading reads.
const (
	// crdsEnv names the variable that lists the directories of Karpenter's CRDs (karpenter.sh,
	// karpenter.kwok.sh and autoscaling.x-k8s.io), separated as in PATH; make test-autoscaler
	// points it into the module that hack/tools/karpenter pins.
	crdsEnv = "KARPENTER_CRDS"
	// binaryEnv names the variable that, when set, is Karpenter's binary; else it is karpenter
	// in LOCALCLUSTER_BIN_DIR, where make test-autoscaler builds it.
	binaryEnv = "KARPENTER"
	// readyTimeout bounds the wait for Karpenter's /readyz, which needs its caches synced and its
	// CRDs served: a second or two.
	readyTimeout = time.Minute
	// batchIdle and batchMax end Karpenter's batches of pending pods sooner than its defaults (1s
	// and 10s): the tests create their pods at once.
	batchIdle, batchMax = "1s", "3s"
)

// Karpenter's kinds, read and written as unstructured objects: the operator's module does not
// depend on Karpenter's.
var (
	nodePoolKind  = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodePool"}
	nodeClaimKind = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodeClaim"}
	nodeClassKind = schema.GroupVersionKind{Group: "karpenter.kwok.sh", Version: "v1alpha1", Kind: "KWOKNodeClass"}
)

const (
	// nodeClassName is the KWOKNodeClass of every NodePool; its CRD defaults its status to Ready.
	nodeClassName = "autoscaler"
	// nodePoolLabel names, on a NodeClaim and its Node, the NodePool that launched it.
	nodePoolLabel = "karpenter.sh/nodepool"
	// instanceType is the only instance type the NodePools launch: 16 CPUs, of which 15.9 are
	// allocatable (Karpenter's kwok provider reserves 100m).
	instanceType = "c-16x-amd64-linux"
	// dedicatedKey taints the nodes the NodePools launch, and labels the tests' pods, which alone
	// tolerate the taint: the operator's scheduler pods stay on the system node.
	dedicatedKey = "autoscaler.schedops.io/test"
	// poolLabel is the label of the nodes of each NodePool, which a profile's NodePool plugin selects.
	poolLabel = "pool"
)

// karpenterProcess is Karpenter running beside the cluster.
type karpenterProcess struct {
	proc *localcluster.Process
}

// karpenterPaths returns the directories of Karpenter's CRDs ($KARPENTER_CRDS) and its binary
// ($KARPENTER, or karpenter in binDir).
func karpenterPaths(binDir string) (crdDirs []string, binary string, err error) {
	crdDirs = filepath.SplitList(os.Getenv(crdsEnv))
	if len(crdDirs) == 0 {
		return nil, "", fmt.Errorf("%s is not set: run make test-autoscaler, or set it to Karpenter's kwok/charts/crds and kwok/apis/crds", crdsEnv)
	}
	binary = os.Getenv(binaryEnv)
	if binary == "" {
		binary = filepath.Join(binDir, "karpenter")
	}
	if _, err := os.Stat(binary); err != nil {
		return nil, "", fmt.Errorf("karpenter is missing: run make test-autoscaler, which builds it from hack/tools/karpenter: %w", err)
	}
	return crdDirs, binary, nil
}

// installKarpenterCRDs creates the CRDs of the YAML files in dirs and waits until they are
// established.
func installKarpenterCRDs(ctx context.Context, dirs []string) error {
	var files []string
	for _, dir := range dirs {
		found, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return err
		}
		if len(found) == 0 {
			return fmt.Errorf("%s: no CRD in %s", crdsEnv, dir)
		}
		files = append(files, found...)
	}
	return operatorenv.InstallCRDs(ctx, k8s, files...)
}

// startKarpenter runs Karpenter against the cluster of kubeconfig, logging to logPath, and returns
// once it is ready. It is killed if this process dies.
func startKarpenter(ctx context.Context, binary, kubeconfig, logPath string) (*karpenterProcess, error) {
	ports, err := freeport.Ports(2)
	if err != nil {
		return nil, err
	}
	// Karpenter binds its metrics and health ports on every address (":port"): no setting
	// narrows them to 127.0.0.1, so they are free ports chosen on 127.0.0.1.
	metrics, health := strconv.Itoa(ports[0]), strconv.Itoa(ports[1])
	env := []string{
		"KUBECONFIG=" + kubeconfig,
		"DISABLE_LEADER_ELECTION=true",
		"BATCH_IDLE_DURATION=" + batchIdle,
		"BATCH_MAX_DURATION=" + batchMax,
		"METRICS_PORT=" + metrics,
		"HEALTH_PROBE_PORT=" + health,
		"LOG_LEVEL=debug",
	}
	proc, err := localcluster.StartProcess("karpenter", binary, nil, env, logPath, false)
	if err != nil {
		return nil, err
	}
	k := &karpenterProcess{proc: proc}
	ready := "http://127.0.0.1:" + health + "/readyz"
	err = testutil.Poll(ctx, readyTimeout, func(ctx context.Context) error {
		if !proc.Alive() {
			return errors.New("karpenter exited")
		}
		return testutil.GetOK(ctx, ready)
	})
	if err != nil {
		err = fmt.Errorf("karpenter is not ready: %w; its log ends with:\n%s", err, k.logTail(0, 30))
		return nil, errors.Join(err, proc.Stop(5*time.Second))
	}
	return k, nil
}

// logSize is the size of Karpenter's log so far.
func (k *karpenterProcess) logSize() int64 {
	info, err := os.Stat(k.proc.Log)
	if err != nil {
		return 0
	}
	return info.Size()
}

// logTail returns the last lines of what Karpenter logged after the first from bytes.
func (k *karpenterProcess) logTail(from int64, lines int) string {
	return fileTail(k.proc.Log, from, lines)
}

// fileTail returns the last lines of the file at path after its first from bytes.
func fileTail(path string, from int64, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if from > int64(len(data)) {
		from = 0
	}
	all := strings.Split(strings.TrimRight(string(data[from:]), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// logOnFailure prints the end of what Karpenter logs from now until the end of the test, if
// the test fails.
func (k *karpenterProcess) logOnFailure(t *testing.T) {
	from := k.logSize()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Karpenter's log during the test (%s), last lines:\n%s", k.proc.Log, k.logTail(from, 80))
		}
	})
}

// nodeClass is the KWOKNodeClass of the NodePools: nodes register at once.
func nodeClass() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(nodeClassKind)
	u.SetName(nodeClassName)
	return u
}

// nodePool is a NodePool whose nodes carry the label pool=pool and the taint dedicatedKey, of
// one instance type. Of several NodePools that can take a pod, Karpenter launches a node of
// the one of the highest weight (nodepoolutils.OrderByWeight; the first template that fits
// wins), whatever their prices. Its nodes are never consolidated or expired, so that nodes
// that stay empty stay for the test to see.
func nodePool(name, pool string, weight int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"weight":     weight,
			"disruption": map[string]any{"consolidateAfter": "Never"},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{poolLabel: pool}},
				"spec": map[string]any{
					"nodeClassRef": map[string]any{"group": nodeClassKind.Group, "kind": nodeClassKind.Kind, "name": nodeClassName},
					"expireAfter":  "Never",
					"taints":       []any{map[string]any{"key": dedicatedKey, "value": "true", "effect": string(corev1.TaintEffectNoSchedule)}},
					"requirements": []any{
						map[string]any{"key": corev1.LabelInstanceTypeStable, "operator": string(corev1.NodeSelectorOpIn), "values": []any{instanceType}},
					},
				},
			},
		},
	}}
	u.SetGroupVersionKind(nodePoolKind)
	u.SetName(name)
	return u
}

// createNodePools creates the NodePools and waits until Karpenter has marked each Ready (it
// ignores the others). When the test ends it deletes them and waits until their NodeClaims and
// Nodes are gone, so that the next test starts without them.
func createNodePools(t *testing.T, pools ...*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	for _, np := range pools {
		if err := k8s.Create(ctx, np); err != nil {
			t.Fatalf("creating NodePool %s: %v", np.GetName(), err)
		}
	}
	t.Cleanup(func() { deleteNodePools(t, pools) })
	testutil.Eventually(t, 30*time.Second, "the NodePools to be Ready", func(ctx context.Context) error {
		for _, np := range pools {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(nodePoolKind)
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(np), got); err != nil {
				return err
			}
			if s := conditionStatus(got, "Ready"); s != "True" {
				return fmt.Errorf("NodePool %s is Ready=%q", np.GetName(), s)
			}
		}
		return nil
	})
}

// deleteNodePools deletes the NodePools, then their NodeClaims, and waits until they and their
// Nodes are gone. Karpenter drains and deletes the Node of a deleted NodeClaim. (The garbage
// collector would delete the NodeClaims of a deleted NodePool too, their owner, but only once its
// discovery, every 30 s, has found the new CRDs' resources: 20 s later on a fresh cluster.)
func deleteNodePools(t *testing.T, pools []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	names := make([]string, 0, len(pools))
	for _, np := range pools {
		names = append(names, np.GetName())
		if err := k8s.Delete(ctx, np); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting NodePool %s: %v", np.GetName(), err)
		}
	}
	claim := &unstructured.Unstructured{}
	claim.SetGroupVersionKind(nodeClaimKind)
	for _, name := range names {
		if err := k8s.DeleteAllOf(ctx, claim, client.MatchingLabels{nodePoolLabel: name}); err != nil {
			t.Errorf("deleting the NodeClaims of NodePool %s: %v", name, err)
		}
	}
	err := testutil.Poll(ctx, 2*time.Minute, func(ctx context.Context) error {
		claims, err := nodeClaims(ctx)
		if err != nil {
			return err
		}
		nodes := &corev1.NodeList{}
		if err := k8s.List(ctx, nodes, client.HasLabels{nodePoolLabel}); err != nil {
			return err
		}
		left := len(claims) + len(nodes.Items)
		for _, np := range pools {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(np), np.DeepCopy())
			if err == nil {
				left++
			} else if !apierrors.IsNotFound(err) {
				return err
			}
		}
		if left > 0 {
			return fmt.Errorf("%d NodeClaims and %d Nodes of Karpenter left, NodePools %v deleting", len(claims), len(nodes.Items), names)
		}
		return nil
	})
	if err != nil {
		t.Errorf("Cleaning up NodePools %v: %v", names, err)
	}
}

// nodeClaims lists Karpenter's NodeClaims.
func nodeClaims(ctx context.Context) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(nodeClaimKind.GroupVersion().WithKind(nodeClaimKind.Kind + "List"))
	if err := k8s.List(ctx, list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// conditionStatus is the status of u's condition typ (status.conditions), "" without one.
func conditionStatus(u *unstructured.Unstructured, typ string) string {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// launches records the NodeClaims that Karpenter launched during a test, by NodePool, as seen
// by every call of see.
type launches map[string][]string

// see lists the NodeClaims and records the new ones; it returns the NodeClaims of each NodePool
// that are Ready (launched, registered and initialized: their Node is Ready).
func (l launches) see(ctx context.Context) (ready map[string][]string, err error) {
	claims, err := nodeClaims(ctx)
	if err != nil {
		return nil, err
	}
	ready = map[string][]string{}
	for i := range claims {
		pool, name := claims[i].GetLabels()[nodePoolLabel], claims[i].GetName()
		if !slices.Contains(l[pool], name) {
			l[pool] = append(l[pool], name)
		}
		if conditionStatus(&claims[i], "Ready") == "True" {
			ready[pool] = append(ready[pool], name)
		}
	}
	return ready, nil
}
