package controllers

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestRolloutFailure is the rollback decision: which states of a new ReplicaSet and its pods mean
// keep waiting, and which mean the rollout failed for good.
func TestRolloutFailure(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rs := func(age time.Duration, available int32) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{}
		r.CreationTimestamp = metav1.NewTime(now.Add(-age))
		r.Spec.Replicas = ptr.To[int32](1)
		r.Status.AvailableReplicas = available
		return r
	}
	waiting := func(reason string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sched-1"}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "details"}}}}
		return p
	}
	unschedulable := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sched-1"}}
	unschedulable.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available"}}
	pending := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sched-1"}}
	pending.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}

	tests := []struct {
		name string
		rs   *appsv1.ReplicaSet
		pods []corev1.Pod
		// want is a part of the cause; empty means keep waiting.
		want string
	}{
		{name: "just created, no pod yet", rs: rs(time.Second, 0)},
		{name: "pod starting", rs: rs(10*time.Second, 0), pods: []corev1.Pod{waiting("ContainerCreating")}},
		{name: "pod scheduled, not ready yet", rs: rs(30*time.Second, 0), pods: []corev1.Pod{pending}},
		{name: "available", rs: rs(time.Hour, 1), pods: []corev1.Pod{pending}},
		{name: "available despite an old crash of another pod", rs: rs(time.Hour, 1), pods: []corev1.Pod{waiting("CrashLoopBackOff")}},
		{name: "crash loop", rs: rs(20*time.Second, 0), pods: []corev1.Pod{waiting("CrashLoopBackOff")}, want: "pod sched-1: CrashLoopBackOff: details"},
		{name: "image cannot be pulled", rs: rs(20*time.Second, 0), pods: []corev1.Pod{waiting("ImagePullBackOff")}, want: "ImagePullBackOff"},
		{name: "bad image name", rs: rs(5*time.Second, 0), pods: []corev1.Pod{waiting("InvalidImageName")}, want: "InvalidImageName"},
		{name: "no node to run on", rs: rs(5*time.Second, 0), pods: []corev1.Pod{unschedulable}, want: "pod sched-1: Unschedulable: 0/3 nodes are available"},
		{name: "past the deadline", rs: rs(4*time.Minute, 0), pods: []corev1.Pod{pending}, want: "0 of 1 new scheduler pods available after 3m0s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := rolloutFailure(tc.rs, tc.pods, defaultRolloutDeadline, now)
			if tc.want == "" && got != "" {
				t.Fatalf("rolloutFailure = %q, want keep waiting", got)
			}
			if !strings.Contains(got, tc.want) || (tc.want != "" && got == "") {
				t.Fatalf("rolloutFailure = %q, want a cause with %q", got, tc.want)
			}
		})
	}
}

// TestRollbackTemplate returns to an earlier ReplicaSet's template without the label its
// controller added, so the Deployment selects the same pods again.
func TestRollbackTemplate(t *testing.T) {
	rs := &appsv1.ReplicaSet{}
	rs.Spec.Template.Labels = map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: "abc", LabelProfile: "p"}
	rs.Spec.Template.Annotations = map[string]string{AnnotationRevision: "r1"}
	got := rollbackTemplate(rs)
	if _, ok := got.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ok || got.Labels[LabelProfile] != "p" || got.Annotations[AnnotationRevision] != "r1" {
		t.Errorf("rollback template labels %v annotations %v", got.Labels, got.Annotations)
	}
	if rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != "abc" {
		t.Error("rollbackTemplate changed the ReplicaSet")
	}
}
