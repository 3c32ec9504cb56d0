// Package e2e runs the operator built with AvoidNodeLabels end to end on the repository's local
// simulated cluster, as the operator's own e2e tier does: the operator in the test process with
// this module's plugins, and the schedulers of its Deployments run from this module's
// kube-scheduler (LOCALCLUSTER_SCHEDULER; `make test-example-e2e` sets it).
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/schedrunner"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/pkg/operator"
	"github.com/schedops/scheduler-profile-operator/scheduler/registry"
	"github.com/schedops/scheduler-profile-operator/test/framework"

	"github.com/schedops/scheduler-profile-operator/examples/avoidnodelabels"
)

// avoidKey labels the nodes that the profile with AvoidNodeLabels refuses, and taints them for
// this test's pods only.
const avoidKey = "dedicated.example.com/batch"

var (
	k8s     client.Client
	cluster *localcluster.Cluster
	runner  *schedrunner.Runner
	op      *framework.Operator
)

func TestMain(m *testing.M) {
	// The operator's previews start this binary as their worker (os.Executable).
	if len(os.Args) > 1 && os.Args[1] == controllers.PreviewWorkerCommand {
		os.Exit(controllers.RunPreviewWorker(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if os.Getenv(localcluster.SchedulerBinaryEnv) == "" {
		fmt.Fprintf(os.Stderr, "%s must name this module's kube-scheduler (make test-example-e2e sets it)\n", localcluster.SchedulerBinaryEnv)
		return 1
	}
	// The operator in this process validates against this module's plugins, as its binary does.
	if err := registry.Use([]operator.Plugin{avoidnodelabels.Plugin()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := setUp(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "e2e set-up failed: %v\n", err)
		if cluster != nil {
			_ = cluster.Stop()
		}
		return 1
	}
	defer func() {
		cancel()
		_ = op.Stop()
		_ = cluster.Stop()
	}()
	return m.Run()
}

func setUp(ctx context.Context) error {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		return err
	}
	binDir, err := localcluster.DefaultBinDir()
	if err != nil {
		return err
	}
	scheduler := os.Getenv(localcluster.SchedulerBinaryEnv)
	workDir, err := os.MkdirTemp("", "avoidnodelabels-e2e-")
	if err != nil {
		return err
	}
	cluster, err = localcluster.Start(ctx, localcluster.Options{BinDir: binDir, SchedulerBinary: scheduler, WorkDir: filepath.Join(workDir, "cluster")})
	if err != nil {
		return err
	}
	if k8s, err = operatorenv.Client(cluster); err != nil {
		return err
	}
	if err := operatorenv.Install(ctx, k8s, root); err != nil {
		return err
	}
	// A node for the operator's own scheduler pods; the test's nodes are tainted for its pods only.
	if err := cluster.CreateNodes(ctx, []*corev1.Node{localcluster.FakeNode("system", nil, nil)}); err != nil {
		return err
	}
	cfg, err := cluster.RESTConfig()
	if err != nil {
		return err
	}
	if op, err = framework.Start(cfg, controllers.ManagerOptions{Namespace: operatorenv.Namespace, SchedulerImage: operatorenv.SchedulerImage}); err != nil {
		return err
	}
	runner = schedrunner.New(schedrunner.Options{
		Client: k8s, Namespace: operatorenv.Namespace, SchedulerBinary: scheduler,
		Kubeconfig: cluster.Kubeconfig(), WorkDir: filepath.Join(workDir, "schedulers"),
	})
	go func() { _ = runner.Run(ctx) }()
	return nil
}

// TestAvoidNodeLabels: on a cluster whose only nodes for the test carry the avoided label, a pod of
// the profile with AvoidNodeLabels stays pending with the plugin's reason, while the same pod of a
// stock profile lands there.
func TestAvoidNodeLabels(t *testing.T) {
	op.LogOnFailure(t)
	node := &testutil.NodeWrapper{Node: *localcluster.FakeNode("labelled", nil, nil)}
	n := node.Label(avoidKey, "true").Taint(corev1.Taint{Key: avoidKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}).Obj()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	if err := cluster.CreateNodes(ctx, []*corev1.Node{n}); err != nil {
		t.Fatal(err)
	}

	avoid := testutil.MakeProfile("avoid").PluginConfig(avoidnodelabels.Name, `{"labels": ["`+avoidKey+`"]}`).Obj()
	avoid.Spec.Plugins = &schedulingv1alpha1.Plugins{Filter: schedulingv1alpha1.PluginSet{Enabled: []schedulingv1alpha1.Plugin{{Name: avoidnodelabels.Name}}}}
	stock := testutil.MakeProfile("stock").Obj()
	for _, p := range []*schedulingv1alpha1.SchedulerProfile{avoid, stock} {
		if err := k8s.Create(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), p) })
		p := waitAvailable(t, p.Name)
		waitScheduler(t, p.Name, p.Status.ConfigHash)
	}

	avoided, placed := pod("avoided", "avoid"), pod("placed", "stock")
	for _, p := range []*corev1.Pod{avoided, placed} {
		if err := k8s.Create(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
	}
	got := &corev1.Pod{}
	testutil.Eventually(t, 60*time.Second, "the stock profile's pod to be bound to the labelled node", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(placed), got); err != nil {
			return err
		}
		if got.Spec.NodeName != n.Name {
			return fmt.Errorf("on node %q; conditions %v", got.Spec.NodeName, got.Status.Conditions)
		}
		return nil
	})
	testutil.Eventually(t, 60*time.Second, "AvoidNodeLabels to refuse the labelled node", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(avoided), got); err != nil {
			return err
		}
		c := testutil.PodScheduled(got)
		if got.Spec.NodeName != "" || c == nil || c.Reason != corev1.PodReasonUnschedulable || !strings.Contains(c.Message, "node(s) carry the label "+avoidKey) {
			return fmt.Errorf("on node %q, PodScheduled %+v", got.Spec.NodeName, c)
		}
		return nil
	})
}

// pod is a pod of the scheduler that tolerates the labelled node's taint.
func pod(name, scheduler string) *corev1.Pod {
	return testutil.MakePod(name, "default").SchedulerName(scheduler).
		Toleration(corev1.Toleration{Key: avoidKey, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}).
		NodeSelector(map[string]string{avoidKey: "true"}).Obj()
}

func waitAvailable(t *testing.T, name string) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	p := &schedulingv1alpha1.SchedulerProfile{}
	testutil.Eventually(t, 90*time.Second, name+" to be Available", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionAvailable)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != p.Generation {
			return fmt.Errorf("conditions %v", p.Status.Conditions)
		}
		return nil
	})
	return p
}

// waitScheduler waits until the runner runs the configuration with hash for the profile.
func waitScheduler(t *testing.T, profile, hash string) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, "the scheduler of "+profile+" to run config "+hash, func(context.Context) error {
		if got := runner.Hash(profile + "-scheduler"); got != hash {
			return fmt.Errorf("runs %q", got)
		}
		return nil
	})
}
