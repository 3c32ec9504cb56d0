package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// goldenGlob matches the configurations rendered by scheduler/profile
// (`go test ./scheduler/profile -update` writes them).
const goldenGlob = "../../scheduler/profile/testdata/*.golden"

// minGoldens is the number of golden files when this test was written; fewer means the glob or
// the testdata directory moved, and the test would silently cover less.
const minGoldens = 8

// leaseTimeout bounds the wait for a scheduler with leader election to hold its lease. Nobody
// else holds it, so the first attempt, right after the informers synced, takes it.
const leaseTimeout = 30 * time.Second

// renderedConfig is the part of a rendered KubeSchedulerConfiguration that this test reads.
type renderedConfig struct {
	LeaderElection struct {
		LeaderElect       bool   `json:"leaderElect"`
		ResourceName      string `json:"resourceName"`
		ResourceNamespace string `json:"resourceNamespace"`
	} `json:"leaderElection"`
	Profiles []struct {
		SchedulerName string `json:"schedulerName"`
	} `json:"profiles"`
}

// TestGoldenConfigsStartTheScheduler runs the real bin/kube-scheduler with every rendered golden
// configuration against the envtest apiserver, changed only by clientConnection.kubeconfig (in a
// pod the scheduler uses its in-cluster config instead), and waits for /readyz. A configuration
// that the binary refuses (unknown field, invalid args, unknown plugin) makes it exit, and the
// subtest fails with its log. With leader election on, the scheduler must take its own lease,
// never the default kube-system/kube-scheduler one.
func TestGoldenConfigsStartTheScheduler(t *testing.T) {
	ctx := t.Context()
	binary := schedulerBinary(t)
	goldens, err := filepath.Glob(goldenGlob)
	if err != nil {
		t.Fatalf("Listing %s: %v", goldenGlob, err)
	}
	if len(goldens) < minGoldens {
		t.Fatalf("Found %d golden configurations (%s), want at least %d", len(goldens), goldenGlob, minGoldens)
	}
	kubeconfig := writeKubeconfig(t, cfg, t.TempDir())

	for _, golden := range goldens {
		t.Run(strings.TrimSuffix(filepath.Base(golden), ".golden"), func(t *testing.T) {
			rendered, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("Reading %s: %v", golden, err)
			}
			var doc renderedConfig
			if err := yaml.Unmarshal(rendered, &doc); err != nil {
				t.Fatalf("Decoding %s: %v", golden, err)
			}
			config := writeFile(t, t.TempDir(), "config.yaml", string(withKubeconfig(t, rendered, kubeconfig)))

			le := doc.LeaderElection
			lease := types.NamespacedName{Namespace: le.ResourceNamespace, Name: le.ResourceName}
			if le.LeaderElect {
				if len(doc.Profiles) != 1 || lease.Name != profile.LeaseName(doc.Profiles[0].SchedulerName) {
					t.Fatalf("Lease %s is not the prefixed name of the scheduler (profiles: %+v)", lease, doc.Profiles)
				}
				ensureNamespace(t, ctx, lease.Namespace)
				// A killed scheduler does not release its lease, which then blocks the next run
				// (-count=N) until it expires. Registered before startScheduler, this cleanup runs
				// after the process is reaped.
				deleteLease(t, ctx, lease)
				t.Cleanup(func() { deleteLease(t, context.Background(), lease) })
			}

			proc := startScheduler(t, binary, config)

			if le.LeaderElect {
				// /readyz does not wait for leadership (a standby is ready too); the lease does.
				holder := waitForLeaseHolder(t, lease, proc)
				t.Logf("Lease %s is held by %s", lease, holder)
			}
			if err := proc.checkRunning(); err != nil {
				t.Fatalf("After /readyz was ok: %v", err)
			}
		})
	}

	// The goldens name their lease after the scheduler; the default lease belongs to the cluster's
	// own kube-scheduler, and envtest runs none.
	defaultLease := types.NamespacedName{Namespace: metav1.NamespaceSystem, Name: "kube-scheduler"}
	err = k8sClient.Get(ctx, defaultLease, &coordinationv1.Lease{})
	if err == nil {
		t.Errorf("Lease %s exists: a scheduler took the default lease", defaultLease)
	} else if !apierrors.IsNotFound(err) {
		t.Errorf("Getting lease %s: %v", defaultLease, err)
	}
}

// withKubeconfig returns rendered with clientConnection.kubeconfig set to kubeconfig, and checks
// that nothing else changed: the scheduler must run the configuration exactly as rendered.
func withKubeconfig(t *testing.T, rendered []byte, kubeconfig string) []byte {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(rendered, &doc); err != nil {
		t.Fatalf("Decoding the rendered configuration: %v", err)
	}
	if cc, ok := doc["clientConnection"]; ok {
		t.Fatalf("The rendered configuration sets clientConnection %v, which this test would overwrite", cc)
	}
	doc["clientConnection"] = map[string]any{"kubeconfig": kubeconfig}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatalf("Encoding the configuration: %v", err)
	}

	var want, got map[string]any
	if err := yaml.Unmarshal(rendered, &want); err != nil {
		t.Fatalf("Decoding the rendered configuration: %v", err)
	}
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatalf("Decoding the configuration with the kubeconfig: %v", err)
	}
	if diff := cmp.Diff(map[string]any{"kubeconfig": kubeconfig}, got["clientConnection"]); diff != "" {
		t.Fatalf("clientConnection (-want +got):\n%s", diff)
	}
	delete(got, "clientConnection")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Setting the kubeconfig changed the rest of the configuration (-rendered +run):\n%s", diff)
	}
	return out
}

// ensureNamespace creates the namespace if it does not exist. It is never deleted: envtest runs no
// namespace controller, so a deleted namespace would stay terminating and refuse new leases.
func ensureNamespace(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8sClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("Creating namespace %s: %v", name, err)
	}
}

// deleteLease deletes the lease if it exists.
func deleteLease(t *testing.T, ctx context.Context, key types.NamespacedName) {
	t.Helper()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := client.IgnoreNotFound(k8sClient.Delete(ctx, lease)); err != nil {
		t.Errorf("Deleting lease %s: %v", key, err)
	}
}

// waitForLeaseHolder waits until the lease has a holder and returns it; it fails at once if the
// scheduler exits.
func waitForLeaseHolder(t *testing.T, key types.NamespacedName, proc *schedulerProcess) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	testutil.Eventually(t, leaseTimeout, "lease "+key.String()+" to be held", func(ctx context.Context) error {
		if err := proc.checkRunning(); err != nil {
			t.Fatalf("Waiting for lease %s to be held: %v", key, err)
		}
		if err := k8sClient.Get(ctx, key, lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return errors.New("no holder")
		}
		return nil
	})
	return *lease.Spec.HolderIdentity
}
