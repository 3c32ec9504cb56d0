package core

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/deploy"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// testNow is the clock of the rollout tests.
var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// ago is a time before testNow.
func ago(d time.Duration) time.Time { return testNow.Add(-d) }

// testPod builds a scheduler pod for the rollout tests.
type testPod struct{ corev1.Pod }

func makeTestPod() *testPod {
	p := &testPod{}
	p.Name = "sched-1"
	p.CreationTimestamp = metav1.NewTime(ago(time.Hour))
	return p
}

// unschedulableSince is a pod the cluster's scheduler could not place from t on.
func (p *testPod) unschedulableSince(t time.Time) *testPod {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/3 nodes are available", LastTransitionTime: metav1.NewTime(t),
	})
	return p
}

// scheduledAt is a pod bound to a node at t.
func (p *testPod) scheduledAt(t time.Time) *testPod {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t),
	})
	return p
}

// waiting is a pod whose container waits for reason after restarts restarts.
func (p *testPod) waiting(reason string, restarts int32) *testPod {
	p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
		Name: "kube-scheduler", RestartCount: restarts,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "details"}},
	})
	return p
}

func (p *testPod) terminating() *testPod {
	p.DeletionTimestamp = ptr.To(metav1.NewTime(ago(time.Second)))
	return p
}

func (p *testPod) obj() corev1.Pod { return p.Pod }

// TestRolloutThresholdsJudge is the rollback decision with time as an input: which states of a
// new ReplicaSet and its pods keep the rollout waiting (and until when), and which fail it, on
// both sides of each threshold. The thresholds are the defaults: 60 s Unschedulable, 60 s of
// start errors from the binding, 3 restarts in CrashLoopBackOff, a 180 s deadline.
func TestRolloutThresholdsJudge(t *testing.T) {
	th := RolloutThresholds{}.withDefaults()
	rs := func(available int32) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{}
		// A Deployment reuses the ReplicaSet of a template it ran before: its age says nothing.
		r.CreationTimestamp = metav1.NewTime(ago(24 * time.Hour))
		r.Spec.Replicas = ptr.To[int32](1)
		r.Status.AvailableReplicas = available
		return r
	}
	tests := []struct {
		name      string
		rs        *appsv1.ReplicaSet
		pods      []corev1.Pod
		appliedAt time.Time
		want      rolloutVerdict
	}{
		{
			name: "just applied, no pod yet", rs: rs(0), appliedAt: ago(time.Second),
			want: rolloutVerdict{recheckAfter: 179 * time.Second},
		},
		{
			name: "pod scheduled, container creating", rs: rs(0), appliedAt: ago(10 * time.Second),
			pods: []corev1.Pod{makeTestPod().scheduledAt(ago(9*time.Second)).waiting("ContainerCreating", 0).obj()},
			want: rolloutVerdict{recheckAfter: 170 * time.Second},
		},
		{
			name: "available", rs: rs(1), appliedAt: ago(time.Hour),
			pods: []corev1.Pod{makeTestPod().scheduledAt(ago(time.Hour)).obj()},
		},
		{
			name: "available despite a crash loop of another pod", rs: rs(1), appliedAt: ago(time.Hour),
			pods: []corev1.Pod{makeTestPod().waiting(reasonCrashLoopBackOff, 9).obj()},
		},
		{
			name: "unschedulable for 1 s: a preemption may be under way", rs: rs(0), appliedAt: ago(2 * time.Second),
			pods: []corev1.Pod{makeTestPod().unschedulableSince(ago(time.Second)).obj()},
			want: rolloutVerdict{recheckAfter: 59 * time.Second},
		},
		{
			name: "unschedulable for 59 s: keep waiting", rs: rs(0), appliedAt: ago(70 * time.Second),
			pods: []corev1.Pod{makeTestPod().unschedulableSince(ago(59 * time.Second)).obj()},
			want: rolloutVerdict{recheckAfter: time.Second},
		},
		{
			name: "unschedulable for 60 s: failed", rs: rs(0), appliedAt: ago(70 * time.Second),
			pods: []corev1.Pod{makeTestPod().unschedulableSince(ago(60 * time.Second)).obj()},
			want: rolloutVerdict{cause: "pod sched-1: Unschedulable for 1m0s: 0/3 nodes are available"},
		},
		{
			name: "unschedulable since before the revision was applied: counts from the apply", rs: rs(0), appliedAt: ago(20 * time.Second),
			pods: []corev1.Pod{makeTestPod().unschedulableSince(ago(time.Hour)).obj()},
			want: rolloutVerdict{recheckAfter: 40 * time.Second},
		},
		{
			name: "unschedulable without a transition time: counts from the pod's creation", rs: rs(0), appliedAt: ago(100 * time.Second),
			pods: []corev1.Pod{func() corev1.Pod {
				p := makeTestPod().unschedulableSince(time.Time{})
				p.CreationTimestamp = metav1.NewTime(ago(30 * time.Second))
				return p.obj()
			}()},
			want: rolloutVerdict{recheckAfter: 30 * time.Second},
		},
		{
			name: "image pull failing 59 s after the binding: keep waiting", rs: rs(0), appliedAt: ago(70 * time.Second),
			pods: []corev1.Pod{makeTestPod().scheduledAt(ago(59*time.Second)).waiting("ImagePullBackOff", 0).obj()},
			want: rolloutVerdict{recheckAfter: time.Second},
		},
		{
			name: "image pull failing 60 s after the binding: failed", rs: rs(0), appliedAt: ago(70 * time.Second),
			pods: []corev1.Pod{makeTestPod().scheduledAt(ago(60*time.Second)).waiting("ErrImagePull", 0).obj()},
			want: rolloutVerdict{cause: "pod sched-1: container kube-scheduler: ErrImagePull for 1m0s: details"},
		},
		{
			name: "a missing ConfigMap key for 30 s: keep waiting", rs: rs(0), appliedAt: ago(70 * time.Second),
			pods: []corev1.Pod{makeTestPod().scheduledAt(ago(30*time.Second)).waiting("CreateContainerConfigError", 0).obj()},
			want: rolloutVerdict{recheckAfter: 30 * time.Second},
		},
		{
			name: "a container that cannot be created for 60 s: failed", rs: rs(0), appliedAt: ago(70 * time.Second),
			pods: []corev1.Pod{makeTestPod().scheduledAt(ago(60*time.Second)).waiting("CreateContainerError", 0).obj()},
			want: rolloutVerdict{cause: "pod sched-1: container kube-scheduler: CreateContainerError for 1m0s: details"},
		},
		{
			name: "an image name that cannot be parsed: failed at once", rs: rs(0), appliedAt: ago(2 * time.Second),
			pods: []corev1.Pod{makeTestPod().scheduledAt(ago(time.Second)).waiting(reasonInvalidImageName, 0).obj()},
			want: rolloutVerdict{cause: "pod sched-1: container kube-scheduler: InvalidImageName: details"},
		},
		{
			name: "one crash: keep waiting, the next restart changes the pod", rs: rs(0), appliedAt: ago(20 * time.Second),
			pods: []corev1.Pod{makeTestPod().scheduledAt(ago(19*time.Second)).waiting(reasonCrashLoopBackOff, 1).obj()},
			want: rolloutVerdict{recheckAfter: 160 * time.Second},
		},
		{
			name: "crash loop after 2 restarts: keep waiting", rs: rs(0), appliedAt: ago(60 * time.Second),
			pods: []corev1.Pod{makeTestPod().scheduledAt(ago(59*time.Second)).waiting(reasonCrashLoopBackOff, 2).obj()},
			want: rolloutVerdict{recheckAfter: 120 * time.Second},
		},
		{
			name: "crash loop after 3 restarts: failed", rs: rs(0), appliedAt: ago(90 * time.Second),
			pods: []corev1.Pod{makeTestPod().scheduledAt(ago(89*time.Second)).waiting(reasonCrashLoopBackOff, 3).obj()},
			want: rolloutVerdict{cause: "pod sched-1: container kube-scheduler: CrashLoopBackOff after 3 restarts: details"},
		},
		{
			name: "a terminating pod is not judged", rs: rs(0), appliedAt: ago(90 * time.Second),
			pods: []corev1.Pod{makeTestPod().unschedulableSince(ago(time.Hour)).terminating().obj()},
			want: rolloutVerdict{recheckAfter: 90 * time.Second},
		},
		{
			name: "the first threshold ahead decides the recheck", rs: rs(0), appliedAt: ago(100 * time.Second),
			pods: []corev1.Pod{
				makeTestPod().unschedulableSince(ago(50 * time.Second)).obj(),
				makeTestPod().scheduledAt(ago(30*time.Second)).waiting("ImagePullBackOff", 0).obj(),
			},
			want: rolloutVerdict{recheckAfter: 10 * time.Second},
		},
		{
			name: "the deadline ahead of every threshold decides the recheck", rs: rs(0), appliedAt: ago(175 * time.Second),
			pods: []corev1.Pod{makeTestPod().unschedulableSince(ago(10 * time.Second)).obj()},
			want: rolloutVerdict{recheckAfter: 5 * time.Second},
		},
		{
			name: "1 s before the deadline: keep waiting", rs: rs(0), appliedAt: ago(179 * time.Second),
			pods: []corev1.Pod{makeTestPod().scheduledAt(ago(170 * time.Second)).obj()},
			want: rolloutVerdict{recheckAfter: time.Second},
		},
		{
			name: "at the deadline: failed", rs: rs(0), appliedAt: ago(180 * time.Second),
			pods: []corev1.Pod{makeTestPod().scheduledAt(ago(170 * time.Second)).obj()},
			want: rolloutVerdict{cause: "0 of 1 new scheduler pods available 3m0s after the revision was applied, the rollout deadline"},
		},
		{
			name: "at the deadline, with a pod still unschedulable: the cause says so", rs: rs(0), appliedAt: ago(180 * time.Second),
			pods: []corev1.Pod{makeTestPod().unschedulableSince(ago(30 * time.Second)).obj()},
			want: rolloutVerdict{cause: "0 of 1 new scheduler pods available 3m0s after the revision was applied, the rollout deadline; pod sched-1: Unschedulable: 0/3 nodes are available"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := th.judge(tc.rs, tc.pods, tc.appliedAt, DefaultRolloutDeadline, testNow)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(rolloutVerdict{})); diff != "" {
				t.Errorf("judge (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRolloutThresholdsSettings: the operator's settings replace the defaults one by one.
func TestRolloutThresholdsSettings(t *testing.T) {
	th := RolloutThresholds{Unschedulable: 5 * time.Second, CrashLoopRestarts: 1}.withDefaults()
	want := RolloutThresholds{Deadline: DefaultRolloutDeadline, Unschedulable: 5 * time.Second, StartError: DefaultStartErrorTimeout, CrashLoopRestarts: 1}
	if diff := cmp.Diff(want, th); diff != "" {
		t.Fatalf("withDefaults (-want +got):\n%s", diff)
	}
	pods := []corev1.Pod{makeTestPod().unschedulableSince(ago(5 * time.Second)).obj()}
	rs := &appsv1.ReplicaSet{}
	if got := th.judge(rs, pods, ago(time.Minute), DefaultRolloutDeadline, testNow); got.cause == "" {
		t.Errorf("a pod unschedulable for the 5 s threshold kept the rollout waiting: %+v", got)
	}
	pods = []corev1.Pod{makeTestPod().waiting(reasonCrashLoopBackOff, 1).obj()}
	if got := th.judge(rs, pods, ago(time.Minute), DefaultRolloutDeadline, testNow); got.cause == "" {
		t.Errorf("a crash loop at the threshold of 1 restart kept the rollout waiting: %+v", got)
	}
}

// TestRolloutTransitions is the rollout state machine: what each observation of the Deployment's
// revision does to the state an owner's status remembers.
func TestRolloutTransitions(t *testing.T) {
	const a, b, c = "rev-a", "rev-b", "rev-c"
	failed := &rolloutVerdict{cause: "pod sched-1: Unschedulable for 1m0s: no node"}
	wait := &rolloutVerdict{recheckAfter: 7 * time.Second}
	tests := []struct {
		name   string
		from   rolloutState
		obs    rolloutObservation
		judged bool
		want   rolloutState
	}{
		{
			name: "first rollout in progress: nothing to return to, not judged",
			obs:  rolloutObservation{revision: a},
		},
		{
			name: "first rollout available",
			obs:  rolloutObservation{revision: a, available: true},
			want: rolloutState{lastAvailable: a},
		},
		{
			name:   "a change in progress waits for its next threshold",
			from:   rolloutState{lastAvailable: a},
			obs:    rolloutObservation{revision: b, verdict: wait},
			judged: true,
			want:   rolloutState{lastAvailable: a, recheckAfter: 7 * time.Second},
		},
		{
			name:   "a change fails for good",
			from:   rolloutState{lastAvailable: a},
			obs:    rolloutObservation{revision: b, verdict: failed},
			judged: true,
			want:   rolloutState{lastAvailable: a, failed: b, cause: failed.cause, recheckAfter: time.Second},
		},
		{
			name: "a change becomes available",
			from: rolloutState{lastAvailable: a},
			obs:  rolloutObservation{revision: b, available: true},
			want: rolloutState{lastAvailable: b},
		},
		{
			name:   "a revert to a revision that ran before is judged like any rollout",
			from:   rolloutState{lastAvailable: b},
			obs:    rolloutObservation{revision: a, verdict: wait},
			judged: true,
			want:   rolloutState{lastAvailable: b, recheckAfter: 7 * time.Second},
		},
		{
			name: "a revert becomes available",
			from: rolloutState{lastAvailable: b},
			obs:  rolloutObservation{revision: a, available: true},
			want: rolloutState{lastAvailable: a},
		},
		{
			name: "rolled back, the last available revision starting again: not judged",
			from: rolloutState{lastAvailable: a, failed: b, cause: "x"},
			obs:  rolloutObservation{revision: a},
			want: rolloutState{lastAvailable: a, failed: b, cause: "x"},
		},
		{
			name: "the failed revision still in a stale cache: not judged again",
			from: rolloutState{lastAvailable: a, failed: b, cause: "x"},
			obs:  rolloutObservation{revision: b},
			want: rolloutState{lastAvailable: a, failed: b, cause: "x"},
		},
		{
			name:   "after a rollback, another change is judged and keeps the failure until run clears it",
			from:   rolloutState{lastAvailable: a, failed: b, cause: "x"},
			obs:    rolloutObservation{revision: c, verdict: wait},
			judged: true,
			want:   rolloutState{lastAvailable: a, failed: b, cause: "x", recheckAfter: 7 * time.Second},
		},
		{
			name: "back on the last available revision, available again",
			from: rolloutState{lastAvailable: a, failed: b, cause: "x"},
			obs:  rolloutObservation{revision: a, available: true},
			want: rolloutState{lastAvailable: a, failed: b, cause: "x"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.from.judges(tc.obs.revision, tc.obs.available); got != tc.judged {
				t.Errorf("judges = %t, want %t", got, tc.judged)
			}
			got := tc.from.next(tc.obs)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(rolloutState{}, upgradeStep{})); diff != "" {
				t.Errorf("next (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStampApplied: a Deployment records when its revision was applied, carries that time while
// the revision stays, and gets a new one for any other revision, one that ran before included.
func TestStampApplied(t *testing.T) {
	const earlier = "2026-11-30T11:00:00Z"
	live := func(revision, appliedAt string) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Spec.Template.Annotations = map[string]string{schedulingv1alpha1.AnnotationRevision: revision}
		if appliedAt != "" {
			d.Annotations = map[string]string{schedulingv1alpha1.AnnotationRevisionAppliedAt: appliedAt}
		}
		return d
	}
	tests := []struct {
		name string
		live *appsv1.Deployment
		want string
	}{
		{name: "a new Deployment", want: "2026-11-30T12:00:00Z"},
		{name: "the same revision keeps its time", live: live("rev-a", earlier), want: earlier},
		{name: "a new revision", live: live("rev-b", earlier), want: "2026-11-30T12:00:00Z"},
		{name: "the same revision, applied by an operator that did not record it", live: live("rev-a", ""), want: "2026-11-30T12:00:00Z"},
		{name: "the same revision with a time that does not parse", live: live("rev-a", "yesterday"), want: "2026-11-30T12:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			desired := appsv1ac.Deployment("s", "ns").WithSpec(appsv1ac.DeploymentSpec().
				WithTemplate(corev1ac.PodTemplateSpec().WithAnnotations(map[string]string{schedulingv1alpha1.AnnotationRevision: "rev-a"})))
			stampApplied(desired, tc.live, testNow.Add(300*time.Millisecond))
			if diff := cmp.Diff(map[string]string{schedulingv1alpha1.AnnotationRevisionAppliedAt: tc.want}, desired.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRollbackTemplate returns to an earlier ReplicaSet's template without the label its
// controller added, so the Deployment selects the same pods again.
func TestRollbackTemplate(t *testing.T) {
	rs := &appsv1.ReplicaSet{}
	rs.Spec.Template.Labels = map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: "abc", schedulingv1alpha1.LabelProfile: "p"}
	rs.Spec.Template.Annotations = map[string]string{schedulingv1alpha1.AnnotationRevision: "r1"}
	got := rollbackTemplate(rs)
	if _, ok := got.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ok || got.Labels[schedulingv1alpha1.LabelProfile] != "p" || got.Annotations[schedulingv1alpha1.AnnotationRevision] != "r1" {
		t.Errorf("rollback template labels %v annotations %v", got.Labels, got.Annotations)
	}
	if rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != "abc" {
		t.Error("rollbackTemplate changed the ReplicaSet")
	}
}

// TestRollbackChecksConsent: a rollback mounts the Secrets of the revision it returns to, so it
// is refused, saying why, when one of them no longer consents to the process or is gone; a
// Deployment that runs that revision already is given it again, since that mounts nothing new.
func TestRollbackChecksConsent(t *testing.T) {
	proc := dedicated(testutil.MakeProfile("p").Obj())
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: testSettings.Namespace, Name: "p-scheduler-1", Labels: proc.SelectorLabels()}}
	rs.Spec.Template.Labels = proc.SelectorLabels()
	rs.Spec.Template.Annotations = map[string]string{schedulingv1alpha1.AnnotationRevision: "r1"}
	rs.Spec.Template.Spec.Volumes = []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "p-config-1"}}}},
		{Name: "extender-tls-0", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "a"}}},
		{Name: "extender-tls-1", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "b"}}},
	}
	withdrawn := tlsSecret("b", nil)
	withdrawn.Annotations[schedulingv1alpha1.AnnotationExtenderTLSFor] = "q"
	onRevision := func(rev string) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Spec.Template.Annotations = map[string]string{schedulingv1alpha1.AnnotationRevision: rev}
		return d
	}
	const notFor = `Secret ops/b, which that revision mounts, does not consent to p: its annotation scheduling.schedops.io/extender-tls-for does not list "p"; the Secret's owner adds it there to consent`
	tests := []struct {
		name        string
		secrets     []client.Object
		live        *appsv1.Deployment
		wantRefused string
	}{
		{name: "both Secrets consent", secrets: []client.Object{tlsSecret("a", nil), tlsSecret("b", nil)}, live: onRevision("r2")},
		{name: "a Secret withdrew its consent", secrets: []client.Object{tlsSecret("a", nil), withdrawn}, live: onRevision("r2"), wantRefused: notFor},
		{name: "a Secret withdrew its consent, no live Deployment", secrets: []client.Object{tlsSecret("a", nil), withdrawn}, wantRefused: notFor},
		{name: "a Secret is gone", secrets: []client.Object{tlsSecret("a", nil)}, live: onRevision("r2"),
			wantRefused: "Secret ops/b, which that revision mounts, does not exist"},
		{name: "the Deployment runs the revision already", secrets: []client.Object{tlsSecret("a", nil), withdrawn}, live: onRevision("r1")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := fakeObjects(append(tc.secrets, rs.DeepCopy())...)
			rollback, refused, err := r.rollbackDeployment(t.Context(), proc, "r1", tc.live, "")
			if err != nil {
				t.Fatal(err)
			}
			if refused != tc.wantRefused {
				t.Errorf("refused %q, want %q", refused, tc.wantRefused)
			}
			if (rollback == nil) != (tc.wantRefused != "") {
				t.Fatalf("rollback %v with refusal %q: a rollback is made exactly when it is not refused", rollback, refused)
			}
			if rollback != nil {
				d := testutil.Typed[appsv1.Deployment](t, rollback.Desired)
				if got := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]; got != "r1" {
					t.Errorf("the rollback applies revision %q, want r1", got)
				}
			}
		})
	}
}

// TestRolloutFailedMessageOfARefusedRollback: the status says that the Deployment was not
// returned, and why.
func TestRolloutFailedMessageOfARefusedRollback(t *testing.T) {
	st := rolloutState{lastAvailable: "r1", failed: "r2", cause: "pod x: Unschedulable for 1m0s", rollbackRefused: "Secret ops/b, which that revision mounts, does not exist"}
	want := "the rollout of scheduler revision r2 failed (pod x: Unschedulable for 1m0s); the Deployment is not returned to revision r1, the last that ran available, since a rollback is checked like a rollout: Secret ops/b, which that revision mounts, does not exist; a change of the spec tries again"
	if got := rolloutFailedMessage(st); got != want {
		t.Errorf("message\n%s\nwant\n%s", got, want)
	}
	var ps schedulingv1alpha1.ProcessStatus
	st.writeTo(&ps)
	if got := rolloutStateOf(ps); got != st {
		t.Errorf("the status keeps %+v, want %+v: a member reads its Scheduler's rollout from the status", got, st)
	}
}

// TestRollbackTakesNoServedName: a Scheduler's rollback is refused when the revision it returns
// to has the entry of a member that left, whose scheduler name another profile serves now; the
// names of its own members and older revisions do not refuse it. Before, the rollback brought the
// old entry back beside the profile that took the name: two schedulers on one name.
func TestRollbackTakesNoServedName(t *testing.T) {
	s := testutil.MakeScheduler("shared").Obj()
	s.Status.Profiles = []schedulingv1alpha1.SchedulerMember{{Name: "a", SchedulerName: "a"}}
	proc := plan.SharedProcess(s)
	config, mounting := configWithNames, mountingConfig
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: testSettings.Namespace, Name: "shared.scheduler-1", Labels: proc.SelectorLabels()}}
	rs.Spec.Template.Labels = proc.SelectorLabels()
	rs.Spec.Template.Annotations = map[string]string{schedulingv1alpha1.AnnotationRevision: "r1"}
	rs.Spec.Template.Spec = mounting("shared.config-1")
	// The dedicated profile "left" now serves the name the old revision had for a member.
	taken := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: testSettings.Namespace, Name: "left-scheduler",
			Labels: map[string]string{plan.LabelName: "kube-scheduler", plan.LabelManagedBy: schedulingv1alpha1.FieldManager, schedulingv1alpha1.LabelProfile: "left"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: mounting("left-config-1")}},
	}
	live := &appsv1.Deployment{}
	live.Spec.Template.Annotations = map[string]string{schedulingv1alpha1.AnnotationRevision: "r2"}
	tests := []struct {
		name        string
		objs        []client.Object
		wantRefused string
	}{
		{name: "its own member's name", objs: []client.Object{config("shared.config-1", "a")}},
		{name: "a name another profile took", objs: []client.Object{config("shared.config-1", "a", "left"), config("left-config-1", "left"), taken},
			wantRefused: `returning to it would serve schedulerName "left", which SchedulerProfile "left" serves now`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := fakeObjects(append(tc.objs, rs.DeepCopy(), s.DeepCopy())...)
			rollback, refused, err := r.rollbackDeployment(t.Context(), proc, "r1", live, "")
			if err != nil {
				t.Fatal(err)
			}
			if refused != tc.wantRefused || (rollback == nil) != (refused != "") {
				t.Errorf("rollback %v, refused %q; want refused %q", rollback != nil, refused, tc.wantRefused)
			}
		})
	}
}

// TestRollbackKeepsTheStoppedMark: a rollback of a user's change, on a Deployment that a rollback
// from the operator's image marked, keeps the mark, so that the stopped wave stays stopped. Before
// carryImageRollback was called here, the apply of such a rollback dropped the annotation and the
// image that failed was tried again.
func TestRollbackKeepsTheStoppedMark(t *testing.T) {
	proc := dedicated(testutil.MakeProfile("p").Obj())
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: testSettings.Namespace, Name: "p-scheduler-1", Labels: proc.SelectorLabels()}}
	rs.Spec.Template.Labels = proc.SelectorLabels()
	rs.Spec.Template.Annotations = map[string]string{schedulingv1alpha1.AnnotationRevision: "r1", schedulingv1alpha1.AnnotationLease: proc.LeaseName}
	rs.Spec.Template.Spec.Containers = []corev1.Container{{Name: deploy.SchedulerContainer, Image: "example.com/spo:v1"}}
	for _, tc := range []struct {
		name, mark string
		wantMark   bool
	}{
		{name: "marked with the operator's image", mark: testSettings.Image, wantMark: true},
		{name: "marked with another image", mark: "example.com/spo:old"},
		{name: "not marked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := &appsv1.Deployment{}
			live.Spec.Template.Annotations = map[string]string{schedulingv1alpha1.AnnotationRevision: "r2"}
			if tc.mark != "" {
				live.Annotations = map[string]string{schedulingv1alpha1.AnnotationImageRolledBack: tc.mark}
			}
			// The revision rolled back from runs the same image as r1: markImageRollback adds nothing.
			r := fakeObjects(rs.DeepCopy())
			rollback, refused, err := r.rollbackDeployment(t.Context(), proc, "r1", live, "example.com/spo:v1")
			if err != nil || refused != "" || rollback == nil {
				t.Fatalf("rollback %v, refused %q, err %v", rollback, refused, err)
			}
			d := testutil.Typed[appsv1.Deployment](t, rollback.Desired)
			if got, ok := d.Annotations[schedulingv1alpha1.AnnotationImageRolledBack]; ok != tc.wantMark || (ok && got != testSettings.Image) {
				t.Errorf("the rollback's mark is %q (set: %v), want set: %v", got, ok, tc.wantMark)
			}
		})
	}
}

func TestOneLeaderStrategy(t *testing.T) {
	p := testutil.MakeProfile("binpack").Obj()
	onLease := func(lease string) map[string]string {
		if lease == "" {
			return map[string]string{schedulingv1alpha1.AnnotationRevision: "old"}
		}
		return map[string]string{schedulingv1alpha1.AnnotationRevision: "old", schedulingv1alpha1.AnnotationLease: lease}
	}
	live := func(lease string, strategy appsv1.DeploymentStrategyType, updated int32) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
		d.Spec.Replicas = ptr.To[int32](2)
		d.Spec.Strategy.Type = strategy
		d.Spec.Template.Annotations = onLease(lease)
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: updated}
		return d
	}
	cases := []struct {
		name string
		live *appsv1.Deployment
		want appsv1.DeploymentStrategyType
	}{
		{name: "first apply", want: appsv1.RollingUpdateDeploymentStrategyType},
		{name: "same lease", live: live("schedops-binpack", appsv1.RollingUpdateDeploymentStrategyType, 2), want: appsv1.RollingUpdateDeploymentStrategyType},
		{name: "upgrade from the legacy lease", live: live("", appsv1.RollingUpdateDeploymentStrategyType, 2), want: appsv1.RecreateDeploymentStrategyType},
		{name: "another lease", live: live("binpack", appsv1.RollingUpdateDeploymentStrategyType, 2), want: appsv1.RecreateDeploymentStrategyType},
		{name: "recreate not done", live: live("schedops-binpack", appsv1.RecreateDeploymentStrategyType, 0), want: appsv1.RecreateDeploymentStrategyType},
		{name: "recreate done", live: live("schedops-binpack", appsv1.RecreateDeploymentStrategyType, 2), want: appsv1.RollingUpdateDeploymentStrategyType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			proc := dedicated(p)
			desired := deploy.Deployment(proc, testSettings, testConfig(t, p))
			oneLeaderStrategy(proc, desired, tc.live)
			if got := *desired.Spec.Strategy.Type; got != tc.want {
				t.Errorf("strategy %s, want %s", got, tc.want)
			}
			if tc.want == appsv1.RecreateDeploymentStrategyType && desired.Spec.Strategy.RollingUpdate != nil {
				t.Errorf("a Recreate strategy with rollingUpdate %+v: the apiserver refuses it", desired.Spec.Strategy.RollingUpdate)
			}
		})
	}
}
