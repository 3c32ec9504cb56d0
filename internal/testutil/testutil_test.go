package testutil

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	pkgruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

func TestMakeProfile(t *testing.T) {
	got := MakeProfile("binpack").UID("uid-1").SchedulerName("packer").Replicas(2).
		PluginConfig("NodeResourcesFit", `{"scoringStrategy":{"type":"MostAllocated"}}`).PluginConfig("NodePool", "").Obj()
	want := &schedulingv1alpha1.SchedulerProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "binpack", UID: "uid-1"},
		Spec: schedulingv1alpha1.SchedulerProfileSpec{
			SchedulerName: "packer",
			Scheduler:     schedulingv1alpha1.SchedulerSettings{Replicas: ptr.To[int32](2)},
			PluginConfig: []schedulingv1alpha1.PluginConfig{
				{Name: "NodeResourcesFit", Args: pkgruntime.RawExtension{Raw: []byte(`{"scoringStrategy":{"type":"MostAllocated"}}`)}},
				{Name: "NodePool"},
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MakeProfile (-want +got):\n%s", diff)
	}
}

// TestObjIsACopy checks that a wrapper can be the base of several objects: changing it after Obj
// leaves the earlier object alone.
func TestObjIsACopy(t *testing.T) {
	base := MakeProfile("p")
	first := base.Obj()
	second := base.Replicas(3).Obj()
	if first.Spec.Scheduler.Replicas != nil || ptr.Deref(second.Spec.Scheduler.Replicas, 0) != 3 {
		t.Errorf("replicas: first %v, second %v; want nil and 3", first.Spec.Scheduler.Replicas, second.Spec.Scheduler.Replicas)
	}
}

func TestMakeNode(t *testing.T) {
	got := MakeNode("n1").Label("pool", "a").Labels(map[string]string{"tier": "spot"}).
		Capacity(map[corev1.ResourceName]string{corev1.ResourceCPU: "4"}).
		Taint(corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}).Ready().Obj()
	if diff := cmp.Diff(map[string]string{"pool": "a", "tier": "spot"}, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	four := resource.MustParse("4")
	if got.Status.Allocatable.Cpu().Cmp(four) != 0 || got.Status.Capacity.Cpu().Cmp(four) != 0 {
		t.Errorf("capacity %v, allocatable %v, want 4 CPUs each", got.Status.Capacity, got.Status.Allocatable)
	}
	if len(got.Spec.Taints) != 1 || got.Spec.Taints[0].Key != "dedicated" {
		t.Errorf("taints %v", got.Spec.Taints)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != corev1.NodeReady || got.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("conditions %v, want Ready=True", got.Status.Conditions)
	}
}

func TestMakePod(t *testing.T) {
	toleration := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists}
	got := MakePod("p", "default").Label("app", "x").SchedulerName("binpack").NodeSelector(map[string]string{"pool": "a"}).
		Toleration(toleration).Request(corev1.ResourceCPU, "100m").Request(corev1.ResourceMemory, "64Mi").Obj()
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{
			SchedulerName: "binpack",
			NodeSelector:  map[string]string{"pool": "a"},
			Tolerations:   []corev1.Toleration{toleration},
			Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			}}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MakePod (-want +got):\n%s", diff)
	}
}

func TestPoll(t *testing.T) {
	calls := 0
	err := Poll(t.Context(), 5*time.Second, func(context.Context) error {
		calls++
		if calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("Poll = %v after %d calls, want nil after 3", err, calls)
	}

	err = Poll(t.Context(), 300*time.Millisecond, func(context.Context) error { return errors.New("not there yet") })
	if err == nil || !strings.Contains(err.Error(), "not within 300ms: not there yet") {
		t.Errorf("Poll of a condition that never holds = %v, want its last error after the timeout", err)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and ends its goroutine, as
// t.Fatalf does, so that the failures of Eventually and Consistently can be checked.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failure runs fn with a fatalRecorder and returns its failure message, "" if it did not fail.
func failure(t *testing.T, fn func(tb testing.TB)) string {
	f := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.msg
}

func TestEventuallyAndConsistently(t *testing.T) {
	never := func(context.Context) error { return errors.New("no pod") }
	always := func(context.Context) error { return nil }
	if msg := failure(t, func(tb testing.TB) { Eventually(tb, 200*time.Millisecond, "the pod", never) }); !strings.Contains(msg, "Waiting for the pod: not within 200ms: no pod") {
		t.Errorf("Eventually of a condition that never holds failed with %q", msg)
	}
	if msg := failure(t, func(tb testing.TB) { Eventually(tb, time.Second, "the pod", always) }); msg != "" {
		t.Errorf("Eventually of a condition that holds failed: %s", msg)
	}

	calls := 0
	breaksThird := func(context.Context) error {
		calls++
		if calls == 3 {
			return errors.New("changed")
		}
		return nil
	}
	if msg := failure(t, func(tb testing.TB) { Consistently(tb, 5*time.Second, "the state", breaksThird) }); msg != "the state stopped holding: changed" || calls != 3 {
		t.Errorf("Consistently failed with %q after %d calls, want at the third", msg, calls)
	}
	calls = 0
	counted := func(context.Context) error { calls++; return nil }
	if msg := failure(t, func(tb testing.TB) { Consistently(tb, 350*time.Millisecond, "the state", counted) }); msg != "" || calls < 3 {
		t.Errorf("Consistently of a state that holds: failure %q after %d calls, want none after at least 3", msg, calls)
	}
}
