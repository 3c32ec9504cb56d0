package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

const (
	// gangGroup is the PodGroup of the gang, named as in config/samples/gang/podgroup.yaml.
	gangGroup = "training"
	// gangSize is the gang's minCount and its number of pods.
	gangSize = 3
	// gangPodMilli is most of a 1-CPU gang node: one pod per node.
	gangPodMilli = 800
)

// gangTaint keeps every other pod of the demo off the gang's nodes.
var gangTaint = corev1.Taint{Key: poolKey, Value: "gang", Effect: corev1.TaintEffectNoSchedule}

// runGang applies the gang profile of config/samples/gang, runs a gang of three 800m pods on two
// 1-CPU nodes, which have room for two of them, and prints that none is bound; then adds a third
// node and prints the three bound together. With a real node the pods keep to the kwok nodes.
func runGang(ctx context.Context, cluster *localcluster.Cluster, c client.Client, root string, rn *realNode, out io.Writer) error {
	step("Applying config/samples/gang/schedulerprofile.yaml: the profile gang, with the GenericWorkload gate")
	objs, err := readObjects(filepath.Join(root, "config", "samples", "gang", "schedulerprofile.yaml"))
	if err != nil {
		return err
	}
	p, ok := objs[0].(*schedulingv1alpha1.SchedulerProfile)
	if len(objs) != 1 || !ok {
		return fmt.Errorf("config/samples/gang/schedulerprofile.yaml: want one SchedulerProfile")
	}
	if err := c.Create(ctx, p); err != nil {
		return fmt.Errorf("creating SchedulerProfile %s: %w", p.Name, err)
	}
	if err := waitFor(ctx, c, "SchedulerProfile", p, func() []metav1.Condition { return p.Status.Conditions }); err != nil {
		return err
	}

	step("Creating two 1-CPU nodes for the gang and a PodGroup of 3 pods of 800m, one per node")
	if err := cluster.CreateNodes(ctx, rn.kwokNodes(gangNode("gang-1"), gangNode("gang-2"))); err != nil {
		return err
	}
	pods, err := createGang(ctx, c, profile.SchedulerName(p), rn)
	if err != nil {
		return err
	}
	// Once every pod has been refused, only a cluster event (a new node) brings them back, so
	// the count printed now is the one that stays.
	if err := waitPods(ctx, c, pods, "refused by the scheduler", func(pod *corev1.Pod) bool {
		cond := testutil.PodScheduled(pod)
		return pod.Spec.NodeName == "" && cond != nil && cond.Status == corev1.ConditionFalse
	}); err != nil {
		return err
	}
	if err := reportGang(ctx, c, pods, out); err != nil {
		return err
	}

	step("Adding a third node, gang-3")
	began := time.Now()
	if err := cluster.CreateNodes(ctx, rn.kwokNodes(gangNode("gang-3"))); err != nil {
		return err
	}
	if err := waitPods(ctx, c, pods, "bound", func(pod *corev1.Pod) bool { return pod.Spec.NodeName != "" }); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nA third node joined; %s later the whole gang was bound:\n", time.Since(began).Round(100*time.Millisecond))
	return reportGang(ctx, c, pods, out)
}

// gangNode is a 1-CPU kwok node in the gang pool, tainted for the gang's pods.
func gangNode(name string) *corev1.Node {
	kwokNode := &testutil.NodeWrapper{Node: *localcluster.FakeNode(name, nil, nil)}
	return kwokNode.Labels(map[string]string{zoneKey: "a", poolKey: "gang", lifecycleKey: "on-demand"}).Taint(gangTaint).
		Capacity(map[corev1.ResourceName]string{corev1.ResourceCPU: "1", corev1.ResourceMemory: "4Gi", corev1.ResourcePods: "110"}).Obj()
}

// createGang creates the PodGroup, which schedules gangSize pods or none, and its pods, all at
// once, for scheduler; the pods keep to the gang pool.
func createGang(ctx context.Context, c client.Client, scheduler string, rn *realNode) ([]*corev1.Pod, error) {
	pg := testutil.MakePodGroup(gangGroup, "default").Gang(gangSize).Obj()
	if err := c.Create(ctx, pg); err != nil {
		return nil, fmt.Errorf("creating PodGroup %s: %w", pg.Name, err)
	}
	var pods []*corev1.Pod
	for i := range gangSize {
		pod := testutil.MakePod(fmt.Sprintf("%s-%d", gangGroup, i), "default").
			Label("app", gangGroup).Label("app.kubernetes.io/part-of", partOf).SchedulerName(scheduler).
			NodeSelector(map[string]string{poolKey: gangTaint.Value}).
			Toleration(corev1.Toleration{Key: gangTaint.Key, Operator: corev1.TolerationOpEqual, Value: gangTaint.Value, Effect: gangTaint.Effect}).
			Request(corev1.ResourceCPU, fmt.Sprintf("%dm", gangPodMilli)).Request(corev1.ResourceMemory, "256Mi").PodGroup(gangGroup).Obj()
		rn.onKwok(&pod.Spec)
		if err := c.Create(ctx, pod); err != nil {
			return nil, fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
		pods = append(pods, pod)
	}
	return pods, nil
}

// waitPods reads the pods until each satisfies done.
func waitPods(ctx context.Context, c client.Client, pods []*corev1.Pod, what string, done func(*corev1.Pod) bool) error {
	err := poll(ctx, time.Minute, func() (bool, error) {
		for _, pod := range pods {
			if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
				return false, err
			}
			if !done(pod) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the pods of PodGroup %s were not all %s: %w", gangGroup, what, err)
	}
	return nil
}

// reportGang prints how many of the gang's pods are bound, where, and why the scheduler refused
// those it did.
func reportGang(ctx context.Context, c client.Client, pods []*corev1.Pod, out io.Writer) error {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels{poolKey: gangTaint.Value}); err != nil {
		return err
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name+" ("+n.Status.Allocatable.Cpu().String()+" CPU)")
	}
	bound := 0
	for _, pod := range pods {
		if pod.Spec.NodeName != "" {
			bound++
		}
	}
	fmt.Fprintf(out, "\nPodGroup %s (gang minCount %d, schedulerName %s), pods of %dm on nodes %s: %d of %d bound\n",
		gangGroup, gangSize, pods[0].Spec.SchedulerName, gangPodMilli, strings.Join(names, ", "), bound, len(pods))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  POD\tNODE\tPODSCHEDULED\tMESSAGE")
	for _, pod := range pods {
		node, status, msg := pod.Spec.NodeName, "", ""
		if node == "" {
			node = "<none>"
		}
		if cond := testutil.PodScheduled(pod); cond != nil {
			status, msg = string(cond.Status), cond.Message
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", pod.Name, node, status, msg)
	}
	return tw.Flush()
}
