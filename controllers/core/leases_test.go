package core

import (
	"context"
	"testing"
	"time"

	"github.com/schedops/scheduler-profile-operator/api/scheme"
	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestLeaseReconciler: a scheduler's lease is deleted once no owner renders it and no pod of
// ours that has not ended runs on it, and its holder no longer renews it; every other lease is
// kept, without a write.
func TestLeaseReconciler(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ns := testSettings.Namespace
	// lease is held by holder ("" released), renewed ago before now, for 15 s.
	lease := func(namespace, name, holder string, ago time.Duration) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-ago)))},
		}
	}
	released := func(name string) *coordinationv1.Lease { return lease(ns, name, "", time.Minute) }
	pod := func(name, onLease string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{schedulingv1alpha1.AnnotationLease: onLease}},
			Status:     corev1.PodStatus{Phase: phase},
		}
	}
	deleting := func(obj client.Object) client.Object {
		obj.SetDeletionTimestamp(ptr.To(metav1.NewTime(now)))
		obj.SetFinalizers([]string{"test.schedops.io/hold"})
		return obj
	}

	tests := []struct {
		name    string
		objs    []client.Object
		lease   *coordinationv1.Lease
		deleted bool
		// requeue is set when the lease is judged again later.
		requeue bool
	}{
		{name: "a profile's own scheduler", objs: []client.Object{testutil.MakeProfile("binpack").Obj()},
			lease: released("schedops-binpack")},
		{name: "a profile's own scheduler under another scheduler name", objs: []client.Object{testutil.MakeProfile("p").SchedulerName("team-a").Obj()},
			lease: released("schedops-team-a")},
		{name: "a Scheduler's process", objs: []client.Object{testutil.MakeScheduler("batch").Obj()},
			lease: released("schedops-batch.scheduler")},
		{name: "a Scheduler's process whose name has dots", objs: []client.Object{testutil.MakeScheduler("team.batch").Obj()},
			lease: released("schedops-team.batch.scheduler")},
		{name: "deleted profile", lease: released("schedops-gone"), deleted: true},
		{name: "deleted Scheduler", lease: released("schedops-batch.scheduler"), deleted: true},
		{name: "a profile's old scheduler name", objs: []client.Object{testutil.MakeProfile("p").SchedulerName("new").Obj()},
			lease: released("schedops-old"), deleted: true},
		{name: "profile being deleted", objs: []client.Object{deleting(testutil.MakeProfile("binpack").Obj())},
			lease: released("schedops-binpack"), deleted: true},
		{name: "Scheduler being deleted", objs: []client.Object{deleting(testutil.MakeScheduler("batch").Obj())},
			lease: released("schedops-batch.scheduler"), deleted: true},
		{name: "profile moved into a Scheduler", objs: []client.Object{testutil.MakeProfile("binpack").SchedulerRef("batch").Obj()},
			lease: released("schedops-binpack"), deleted: true},
		{name: "a Scheduler's lease is not a profile's", objs: []client.Object{testutil.MakeProfile("batch").Obj()},
			lease: released("schedops-batch.scheduler"), deleted: true},
		{name: "an old pod still runs on it", objs: []client.Object{pod("old", "schedops-old", corev1.PodRunning)},
			lease: released("schedops-old")},
		{name: "an old pod not yet started", objs: []client.Object{pod("old", "schedops-old", corev1.PodPending)},
			lease: released("schedops-old")},
		{name: "the old pods ended", objs: []client.Object{pod("old-1", "schedops-old", corev1.PodFailed), pod("old-2", "schedops-old", corev1.PodSucceeded)},
			lease: released("schedops-old"), deleted: true},
		{name: "a pod on another lease", objs: []client.Object{pod("new", "schedops-new", corev1.PodRunning)},
			lease: released("schedops-old"), deleted: true},
		{name: "unused, its holder renews it", lease: lease(ns, "schedops-old", "old-pod", 2*time.Second), requeue: true},
		{name: "unused, its holder renewed it within the skew margin", lease: lease(ns, "schedops-old", "old-pod", 40*time.Second), requeue: true},
		{name: "unused, its holder stopped renewing", lease: lease(ns, "schedops-old", "old-pod", time.Minute), deleted: true},
		{name: "without the prefix", lease: released("binpack")},
		{name: "the operator's own", lease: released(schedulingv1alpha1.LeaderElectionID)},
		{name: "in another namespace", lease: lease("kube-system", "schedops-binpack", "", time.Minute)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var writes []string
			c := fakeIndexedClient(interceptor.Funcs{
				Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					writes = append(writes, "delete "+obj.GetName())
					return c.Delete(ctx, obj, opts...)
				},
				Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
					writes = append(writes, "create")
					return nil
				},
				Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
					writes = append(writes, "update")
					return nil
				},
				Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
					writes = append(writes, "patch")
					return nil
				},
			}, append(tc.objs, tc.lease)...)
			r := newLeaseReconciler(c, c, ns)
			r.now = func() time.Time { return now }

			res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tc.lease)})
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			var want []string
			if tc.deleted {
				want = []string{"delete " + tc.lease.Name}
			}
			if diff := cmp.Diff(want, writes); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			err = c.Get(t.Context(), client.ObjectKeyFromObject(tc.lease), &coordinationv1.Lease{})
			if gone := apierrors.IsNotFound(err); gone != tc.deleted {
				t.Errorf("lease gone: %v (%v), want %v", gone, err, tc.deleted)
			}
			if requeued := res.RequeueAfter > 0; requeued != tc.requeue {
				t.Errorf("requeued after %s, want a requeue: %v", res.RequeueAfter, tc.requeue)
			}
		})
	}
}

// TestLeaseReconcilerLeaseGone: a lease that is already gone is no error and no requeue.
func TestLeaseReconcilerLeaseGone(t *testing.T) {
	c := fakeIndexedClient(interceptor.Funcs{})
	r := newLeaseReconciler(c, c, testSettings.Namespace)
	res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: testSettings.Namespace, Name: "schedops-gone"}})
	if err != nil || res.RequeueAfter != 0 {
		t.Errorf("Reconcile = %+v, %v; want no requeue and no error", res, err)
	}
}

// fakeIndexedClient is a fake client of objs with the cache's field indexes, whose calls go
// through funcs.
func fakeIndexedClient(funcs interceptor.Funcs, objs ...client.Object) client.WithWatch {
	b := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).WithInterceptorFuncs(funcs)
	for _, i := range plan.FieldIndexes(heldBy(testSettings.Image), nil) {
		b = b.WithIndex(i.Obj, i.Field, i.Extract)
	}
	return b.Build()
}

// TestLeaseOf: the events of owners and pods map to the leases their schedulers run on, or would
// if they ran their own; rendersLease names the lease an owner runs on now.
func TestLeaseOf(t *testing.T) {
	r := newLeaseReconciler(nil, nil, "ops")
	tests := []struct {
		name    string
		obj     client.Object
		want    string
		renders string
	}{
		{name: "profile", obj: testutil.MakeProfile("binpack").Obj(), want: "schedops-binpack", renders: "schedops-binpack"},
		{name: "profile with a scheduler name", obj: testutil.MakeProfile("p").SchedulerName("team-a").Obj(), want: "schedops-team-a", renders: "schedops-team-a"},
		{name: "member of a Scheduler, whose own scheduler may still run", obj: testutil.MakeProfile("p").SchedulerRef("batch").Obj(), want: "schedops-p"},
		{name: "Scheduler", obj: testutil.MakeScheduler("batch").Obj(), want: "schedops-batch.scheduler", renders: "schedops-batch.scheduler"},
		{name: "pod", obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{schedulingv1alpha1.AnnotationLease: "schedops-binpack"}}}, want: "schedops-binpack"},
		{name: "pod on a lease of an operator before the prefix", obj: &corev1.Pod{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var want []ctrl.Request
			if tc.want != "" {
				want = []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: "ops", Name: tc.want}}}
			}
			if diff := cmp.Diff(want, r.leaseOf(t.Context(), tc.obj)); diff != "" {
				t.Errorf("leaseOf (-want +got):\n%s", diff)
			}
			if got := rendersLease(tc.obj); got != tc.renders {
				t.Errorf("rendersLease = %q, want %q", got, tc.renders)
			}
		})
	}
}

func TestHeldFor(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *metav1.MicroTime { return ptr.To(metav1.NewMicroTime(now.Add(-ago))) }
	tests := []struct {
		name string
		spec coordinationv1.LeaseSpec
		want time.Duration
	}{
		{name: "released", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(""), RenewTime: at(0)}},
		{name: "never held", spec: coordinationv1.LeaseSpec{}},
		{name: "renewed now", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), RenewTime: at(0), LeaseDurationSeconds: ptr.To[int32](15)}, want: 45 * time.Second},
		{name: "expired within the margin", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), RenewTime: at(20 * time.Second), LeaseDurationSeconds: ptr.To[int32](15)}, want: 25 * time.Second},
		{name: "expired past the margin", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), RenewTime: at(time.Minute), LeaseDurationSeconds: ptr.To[int32](15)}},
		{name: "no duration: upstream's", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), RenewTime: at(0)}, want: 45 * time.Second},
		{name: "never renewed: from its creation", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a")}, want: 35 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-10 * time.Second))}, Spec: tc.spec}
			if got := heldFor(l, now); got != tc.want {
				t.Errorf("heldFor = %s, want %s", got, tc.want)
			}
		})
	}
}
