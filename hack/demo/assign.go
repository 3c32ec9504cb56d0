package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// The namespace the demo assigns to the binpack sample, and its unmodified Deployment.
const (
	assignedNamespace  = "demo-team"
	assignedDeployment = "team-app"
	assignedProfile    = "binpack"
)

// runAssignment labels a namespace with the binpack sample's scheduler name and runs in it a
// Deployment whose pods name no scheduler: the operator's admission policy gives them the name in
// the apiserver, and binpack's scheduler packs them.
func runAssignment(ctx context.Context, c client.Client, rn *realNode, out io.Writer) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: assignedNamespace, Labels: map[string]string{schedulingv1alpha1.LabelAssignSchedulerName: assignedProfile}}}
	if err := c.Create(ctx, ns); err != nil {
		return fmt.Errorf("creating Namespace %s: %w", ns.Name, err)
	}
	labels := map[string]string{"app": assignedDeployment, "app.kubernetes.io/part-of": partOf}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
	}}}}
	rn.onKwok(&spec)
	// The apiserver's policy sees a new namespace a moment after it is created; until then a pod
	// of it is left as it is. A dry-run pod shows when the policy assigns.
	err := poll(ctx, time.Minute, func() (bool, error) {
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns.Name}, Spec: spec}
		if err := c.Create(ctx, probe, client.DryRunAll); err != nil {
			return false, err
		}
		return probe.Spec.SchedulerName == assignedProfile, nil
	})
	if err != nil {
		return fmt.Errorf("the assignment policy did not assign the pods of %s: %w", ns.Name, err)
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: assignedDeployment, Namespace: ns.Name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
	if err := c.Create(ctx, d); err != nil {
		return fmt.Errorf("creating Deployment %s: %w", d.Name, err)
	}
	var pods corev1.PodList
	err = poll(ctx, 2*time.Minute, func() (bool, error) {
		if err := c.List(ctx, &pods, client.InNamespace(ns.Name), client.MatchingLabels{"app": assignedDeployment}); err != nil {
			return false, err
		}
		bound := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == int(*d.Spec.Replicas), nil
	})
	if err != nil {
		return fmt.Errorf("the pods of Deployment %s/%s were not all bound: %w", ns.Name, d.Name, err)
	}
	fmt.Fprintf(out, "\nNamespace %s, labelled %s=%s: Deployment %s names no scheduler\n", ns.Name, schedulingv1alpha1.LabelAssignSchedulerName, assignedProfile, d.Name)
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Spec.NodeName+a.Name, b.Spec.NodeName+b.Name) })
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  POD\tSCHEDULERNAME\tNODE\tASSIGNMENT")
	for _, p := range pods.Items {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", p.Name, p.Spec.SchedulerName, p.Spec.NodeName, p.Annotations[schedulingv1alpha1.AnnotationAssignment])
	}
	return tw.Flush()
}
