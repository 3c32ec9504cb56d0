package core

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/internal/bound"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

func TestSetStatus(t *testing.T) {
	cfg := &profile.Config{Hash: "abc123def0", SchedulerName: "bp"}
	deployment := func(hash string, replicas, updated, available int32, conds ...appsv1.DeploymentCondition) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Generation, d.Status.ObservedGeneration = 2, 2
		d.Spec.Replicas = ptr.To(replicas)
		d.Spec.Template.Annotations = map[string]string{schedulingv1alpha1.AnnotationConfigHash: hash}
		d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas = replicas, updated, available
		d.Status.Conditions = conds
		return d
	}
	type want struct{ status, reason string }
	tests := []struct {
		name  string
		prior schedulingv1alpha1.SchedulerProfileStatus
		obs   observation
		want  map[string]want
		// wantHash is status.configHash afterwards.
		wantHash string
	}{
		{
			name: "first valid pass, no replica yet",
			obs:  observation{schedulerName: "bp", config: cfg, applied: true, deployment: deployment("abc123def0", 1, 0, 0)},
			want: map[string]want{
				"ConfigValid": {"True", "ConfigAccepted"}, "Available": {"False", "NoReplicasAvailable"},
				"Progressing": {"True", "RollingOut"}, "Degraded": {"False", "AsExpected"},
			},
			wantHash: "abc123def0",
		},
		{
			name: "rolled out",
			obs:  observation{schedulerName: "bp", config: cfg, applied: true, deployment: deployment("abc123def0", 2, 2, 2)},
			want: map[string]want{
				"ConfigValid": {"True", "ConfigAccepted"}, "Available": {"True", "MinimumReplicasAvailable"},
				"Progressing": {"False", "RolloutComplete"}, "Degraded": {"False", "AsExpected"},
			},
			wantHash: "abc123def0",
		},
		{
			name:  "invalid change while the old config runs",
			prior: schedulingv1alpha1.SchedulerProfileStatus{ProcessStatus: schedulingv1alpha1.ProcessStatus{ConfigHash: "0ld0ld0ld0", ConfigMapName: "bp-config-0ld0ld0ld0"}},
			obs:   observation{schedulerName: "bp", invalid: "spec.percentageOfNodesToScore: Invalid value", deployment: deployment("0ld0ld0ld0", 1, 1, 1)},
			want: map[string]want{
				"ConfigValid": {"False", "InvalidConfig"}, "Available": {"True", "MinimumReplicasAvailable"},
				"Progressing": {"False", "RolloutComplete"}, "Degraded": {"True", "InvalidConfigNotRolledOut"},
			},
			wantHash: "0ld0ld0ld0",
		},
		{
			name: "invalid from the start",
			obs:  observation{schedulerName: "bp", invalid: "bad"},
			want: map[string]want{
				"ConfigValid": {"False", "InvalidConfig"}, "Available": {"False", "NotRolledOut"},
				"Progressing": {"False", "NotRolledOut"}, "Degraded": {"False", "AsExpected"},
			},
		},
		{
			name: "scheduler name conflict",
			obs:  observation{schedulerName: "bp", conflictWith: "older"},
			want: map[string]want{
				"ConfigValid": {"False", "SchedulerNameConflict"}, "Available": {"False", "NotRolledOut"},
				"Degraded": {"True", "SchedulerNameConflict"},
			},
		},
		{
			name:  "applying failed",
			prior: schedulingv1alpha1.SchedulerProfileStatus{ProcessStatus: schedulingv1alpha1.ProcessStatus{ConfigHash: "0ld0ld0ld0", ConfigMapName: "bp-config-0ld0ld0ld0"}},
			obs: observation{schedulerName: "bp", config: cfg, failure: `applying *v1.Deployment ops/bp-scheduler: admission webhook "quota" denied the request`,
				deployment: deployment("0ld0ld0ld0", 1, 1, 1)},
			want: map[string]want{
				"ConfigValid": {"True", "ConfigAccepted"}, "Available": {"True", "MinimumReplicasAvailable"},
				"Degraded": {"True", "ApplyFailed"},
			},
			wantHash: "0ld0ld0ld0",
		},
		{
			name: "rollout stuck past its deadline",
			obs: observation{schedulerName: "bp", config: cfg, applied: true, deployment: deployment("abc123def0", 1, 1, 0,
				appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"})},
			want: map[string]want{
				"Available": {"False", "NoReplicasAvailable"}, "Progressing": {"True", "RollingOut"},
				"Degraded": {"True", "ProgressDeadlineExceeded"},
			},
			wantHash: "abc123def0",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testutil.MakeProfile("bp").Obj()
			p.Generation = 7
			p.Status = tc.prior
			tc.obs.process = dedicated(p)
			setStatus(p, &tc.obs)
			for typ, w := range tc.want {
				c := meta.FindStatusCondition(p.Status.Conditions, typ)
				if c == nil {
					t.Errorf("no %s condition", typ)
					continue
				}
				if string(c.Status) != w.status || c.Reason != w.reason {
					t.Errorf("%s = %s/%s, want %s/%s (%s)", typ, c.Status, c.Reason, w.status, w.reason, c.Message)
				}
				if c.ObservedGeneration != 7 {
					t.Errorf("%s observedGeneration = %d, want 7", typ, c.ObservedGeneration)
				}
			}
			if p.Status.ConfigHash != tc.wantHash {
				t.Errorf("configHash = %q, want %q", p.Status.ConfigHash, tc.wantHash)
			}
			wantGen := int64(0)
			if tc.obs.applied {
				wantGen = 7
			}
			if p.Status.ObservedGeneration != wantGen {
				t.Errorf("observedGeneration = %d, want %d", p.Status.ObservedGeneration, wantGen)
			}
		})
	}
}

// TestSetStatusKeepsTransitionTime checks that an unchanged condition keeps its
// lastTransitionTime, so that a steady-state pass computes an identical status.
func TestSetStatusKeepsTransitionTime(t *testing.T) {
	p := testutil.MakeProfile("bp").Obj()
	obs := &observation{schedulerName: "bp", invalid: "bad"}
	setStatus(p, obs)
	first := p.DeepCopy()
	for i := range p.Status.Conditions {
		p.Status.Conditions[i].LastTransitionTime = metav1.Unix(1, 0)
	}
	setStatus(p, obs)
	for _, c := range p.Status.Conditions {
		if c.LastTransitionTime != metav1.Unix(1, 0) {
			t.Errorf("%s lastTransitionTime changed without a transition", c.Type)
		}
	}
	if len(first.Status.Conditions) != 5 {
		t.Errorf("want 5 conditions (Advisory NotChecked for an invalid spec), got %d", len(first.Status.Conditions))
	}
}

func TestBounded(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		limit int
		want  string
	}{
		{name: "short", in: "abc", limit: 20, want: "abc"},
		{name: "at the limit", in: strings.Repeat("a", 20), limit: 20, want: strings.Repeat("a", 20)},
		{name: "cut", in: strings.Repeat("a", 30), limit: 20, want: "aaaa ... (truncated)"},
		{name: "cut before a rune it would split", in: "a" + strings.Repeat("\u00e9", 10), limit: 18, want: "a ... (truncated)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := bound.String(tc.in, tc.limit)
			if got != tc.want || len(got) > tc.limit || !utf8.ValidString(got) {
				t.Errorf("bound.String(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
			}
		})
	}
	// A rollout failure and a condition message of any length fit the apiserver's limits.
	var ps schedulingv1alpha1.ProcessStatus
	rolloutState{cause: strings.Repeat("x", 10000)}.writeTo(&ps)
	if len(ps.RolloutFailure) > maxRolloutFailure {
		t.Errorf("rolloutFailure has %d characters, limit %d", len(ps.RolloutFailure), maxRolloutFailure)
	}
	var conds []metav1.Condition
	setConditionOn(&conds, 1, "Degraded", metav1.ConditionTrue, "X", strings.Repeat("y", 40000))
	if len(conds[0].Message) > maxConditionMessage {
		t.Errorf("a condition message has %d characters, limit %d", len(conds[0].Message), maxConditionMessage)
	}
}

// TestAfterStaleWrite: a conflict on a status write requeues the pass (the newer object's event
// may be filtered, as a member's own status write is), a deleted object does not, and another
// error is returned. Before, a conflict ended the pass without a requeue.
func TestAfterStaleWrite(t *testing.T) {
	gr := schema.GroupResource{Group: schedulingv1alpha1.GroupVersion.Group, Resource: "schedulerprofiles"}
	tests := []struct {
		name        string
		err         error
		wantHandled bool
		wantRequeue bool
	}{
		{name: "conflict", err: apierrors.NewConflict(gr, "p", errors.New("changed")), wantHandled: true, wantRequeue: true},
		{name: "deleted", err: apierrors.NewNotFound(gr, "p"), wantHandled: true},
		{name: "other", err: errors.New("connection refused")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, handled := afterStaleWrite(tc.err)
			if handled != tc.wantHandled || (res.RequeueAfter > 0) != tc.wantRequeue {
				t.Errorf("afterStaleWrite = %+v, %v; want handled %v, requeue %v", res, handled, tc.wantHandled, tc.wantRequeue)
			}
		})
	}
}
