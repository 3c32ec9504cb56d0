package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

const (
	// gangGate is the scheduler flag that turns gang scheduling on; the profile's featureGates must
	// reach the scheduler process as exactly this.
	gangGate = "--feature-gates=GenericWorkload=true"
	// gangPodMilli is most of a 1-CPU node: one pod per node.
	gangPodMilli = 800
)

// TestGangScheduling: a profile with the GenericWorkload gate schedules the pods of a PodGroup with
// a gang policy all or nothing. Three pods of a gang of three never take the two nodes there are
// room for, where the same pods without a group do take two; once a third node joins, all three
// bind. A gang that fits binds whole.
func TestGangScheduling(t *testing.T) {
	p := applyProfile(t, `
metadata: {name: e2e-gang}
spec:
  scheduler: {featureGates: {GenericWorkload: true}}`)
	// The local cluster serves scheduling.k8s.io/v1beta1 podgroups, so the gate's API check passes.
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	waitScheduler(t, p.Name, p.Status.ConfigHash)
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionAvailable, metav1.ConditionTrue, "", 60*time.Second)
	checkGatePassed(t, p.Status.DeploymentName)

	t.Run("waits for room", func(t *testing.T) {
		nodes := makeNodes(t, "gang-wait", nodeSpec{name: "a", cpus: 1}, nodeSpec{name: "b", cpus: 1})
		createPodGroup(t, "gang-wait", 3)
		gang := nodes.gangPods("e2e-gang", "gang-wait", 3)
		createAtOnce(t, gang...)
		// Every pod of the gang has been through a scheduling cycle and was refused: from here on
		// only a cluster event (a new node) brings them back, so a count now is the final one.
		for _, pod := range gang {
			msg := waitUnschedulable(t, pod)
			t.Logf("%s: %s", pod.Name, msg)
		}
		if n := boundCount(t, gang); n != 0 {
			t.Fatalf("%d of the gang's 3 pods bound on 2 nodes, want 0: a gang binds whole or not at all", n)
		}

		// The contrast: the same pods without a group, on two nodes like these, take both.
		plainNodes := makeNodes(t, "gang-plain", nodeSpec{name: "a", cpus: 1}, nodeSpec{name: "b", cpus: 1})
		var plain []*corev1.Pod
		for i := range 3 {
			plain = append(plain, plainNodes.pod(fmt.Sprint(i), "e2e-gang", gangPodMilli))
		}
		createAtOnce(t, plain...)
		testutil.Eventually(t, 60*time.Second, "2 of the pods without a group to bind and 1 to be refused", func(context.Context) error {
			if bound, refused := boundCount(t, plain), unschedulableCount(t, plain); bound != 2 || refused != 1 {
				return fmt.Errorf("%d bound, %d unschedulable", bound, refused)
			}
			return nil
		})

		// A third node makes room for the whole gang.
		began := time.Now()
		makeNodes(t, "gang-wait", nodeSpec{name: "c", cpus: 1})
		testutil.Eventually(t, 30*time.Second, "the gang's 3 pods to bind after a third node joined", func(context.Context) error {
			if n := boundCount(t, gang); n != 3 {
				return fmt.Errorf("%d bound", n)
			}
			return nil
		})
		t.Logf("the gang's 3 pods bound %s after the third node was schedulable", time.Since(began).Round(100*time.Millisecond))
		if hosts := nodeNames(t, gang); len(hosts) != 3 {
			t.Errorf("the gang's pods share nodes %v, want one pod on each of 3 nodes", hosts)
		}
	})

	t.Run("fits", func(t *testing.T) {
		nodes := makeNodes(t, "gang-fit", nodeSpec{name: "a", cpus: 1}, nodeSpec{name: "b", cpus: 1}, nodeSpec{name: "c", cpus: 1})
		createPodGroup(t, "gang-fit", 3)
		gang := nodes.gangPods("e2e-gang", "gang-fit", 3)
		began := time.Now()
		createAtOnce(t, gang...)
		for _, pod := range gang {
			waitBound(t, pod)
		}
		t.Logf("a gang of 3 that fits bound in %s", time.Since(began).Round(100*time.Millisecond))
		if hosts := nodeNames(t, gang); len(hosts) != 3 {
			t.Errorf("the gang's pods share nodes %v, want one pod on each of 3 nodes", hosts)
		}
	})
}

// checkGatePassed checks that the gate is on the scheduler Deployment's args and on the command
// line of the process that runs it, as the container would get it.
func checkGatePassed(t *testing.T, deployment string) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: deployment}, d); err != nil {
		t.Fatal(err)
	}
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, gangGate) {
		t.Errorf("Deployment %s args %v lack %s", deployment, args, gangGate)
	}
	reps := runner.Replicas(deployment)
	if len(reps) == 0 {
		t.Fatalf("no scheduler process of %s", deployment)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", reps[0].Process.PID))
	if err != nil {
		t.Fatal(err)
	}
	if args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"); !slices.Contains(args, gangGate) {
		t.Errorf("the scheduler process runs with %v, which lacks %s", args, gangGate)
	}
}

// createPodGroup creates a PodGroup in default that schedules minCount pods or none.
func createPodGroup(t *testing.T, name string, minCount int32) {
	t.Helper()
	pg := testutil.MakePodGroup(name, "default").Gang(minCount).Obj()
	if err := k8s.Create(t.Context(), pg); err != nil {
		t.Fatalf("creating PodGroup %s: %v", name, err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pg) })
}

// gangPods are n pods of the test for scheduler that join the PodGroup group, each taking most of a
// 1-CPU node.
func (tn testNodes) gangPods(scheduler, group string, n int) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		pod := tn.pod(fmt.Sprint(i), scheduler, gangPodMilli)
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
		pods = append(pods, pod)
	}
	return pods
}

// createAtOnce creates the pods, without waiting for them, and deletes them when the test ends.
func createAtOnce(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	for _, pod := range pods {
		if err := k8s.Create(t.Context(), pod); err != nil {
			t.Fatalf("creating pod %s: %v", pod.Name, err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	}
}

// waitUnschedulable waits until the scheduler has refused the pod (PodScheduled=False) and returns
// the condition's message.
func waitUnschedulable(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	var msg string
	testutil.Eventually(t, 60*time.Second, "pod "+pod.Name+" to be refused by the scheduler", func(ctx context.Context) error {
		got := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
			return err
		}
		c := testutil.PodScheduled(got)
		if c == nil || c.Status != corev1.ConditionFalse {
			return fmt.Errorf("node %q, PodScheduled %v", got.Spec.NodeName, c)
		}
		msg = c.Reason + ": " + c.Message
		return nil
	})
	return msg
}

// current returns the pods as the apiserver has them now.
func current(t *testing.T, pods []*corev1.Pod) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	for _, pod := range pods {
		got := &corev1.Pod{}
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(pod), got); err != nil {
			t.Fatal(err)
		}
		out = append(out, got)
	}
	return out
}

func boundCount(t *testing.T, pods []*corev1.Pod) int {
	t.Helper()
	n := 0
	for _, pod := range current(t, pods) {
		if pod.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

func unschedulableCount(t *testing.T, pods []*corev1.Pod) int {
	t.Helper()
	n := 0
	for _, pod := range current(t, pods) {
		if c := testutil.PodScheduled(pod); pod.Spec.NodeName == "" && c != nil && c.Status == corev1.ConditionFalse {
			n++
		}
	}
	return n
}

// nodeNames returns the distinct nodes the pods are bound to, sorted.
func nodeNames(t *testing.T, pods []*corev1.Pod) []string {
	t.Helper()
	var names []string
	for _, pod := range current(t, pods) {
		if !slices.Contains(names, pod.Spec.NodeName) {
			names = append(names, pod.Spec.NodeName)
		}
	}
	slices.Sort(names)
	return names
}
