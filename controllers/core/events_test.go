package core

import (
	"testing"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/advice"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// TestRecordEvents checks that events announce transitions, each once, and nothing else.
func TestRecordEvents(t *testing.T) {
	cfg := &profile.Config{Hash: "abc123def0"}
	deployment := func(available int32) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Spec.Replicas = ptr.To[int32](1)
		d.Spec.Template.Annotations = map[string]string{schedulingv1alpha1.AnnotationConfigHash: cfg.Hash}
		d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas = 1, 1, available
		return d
	}
	passes := []struct {
		name string
		obs  observation
		want []string
	}{
		{name: "invalid at first", obs: observation{invalid: "bad"},
			want: []string{"Warning InvalidConfig the scheduler would refuse this configuration, so it is not rolled out: bad"}},
		{name: "the same invalid config again", obs: observation{invalid: "bad"}},
		{name: "fixed: accepted and rolled out, the scheduler still starting", obs: observation{config: cfg, applied: true, deployment: deployment(0)},
			want: []string{
				"Normal ConfigAccepted the configuration passed the scheduler's decoding, validation and plugin construction",
				"Normal RolloutStarted Rolling out the configuration p-config-abc123def0 to Deployment p-scheduler",
			}},
		{name: "available", obs: observation{config: cfg, applied: true, deployment: deployment(1)},
			want: []string{"Normal MinimumReplicasAvailable 1 of 1 scheduler replicas are available"}},
		{name: "steady state", obs: observation{config: cfg, applied: true, deployment: deployment(1)}},
		{name: "availability lost", obs: observation{config: cfg, applied: true, deployment: deployment(0)},
			want: []string{"Warning NoReplicasAvailable 0 of 1 scheduler replicas are available"}},
		{name: "advice found", obs: observation{config: cfg, applied: true, deployment: deployment(0), adviceChecked: true, advice: []advice.Advice{{Code: "SPA104", Message: "m"}}},
			want: []string{"Normal AdviceFound the profile will probably not do what was meant (SPA104): status.advice lists the findings, docs/reference/advice.md the fixes"}},
		{name: "the same advice again", obs: observation{config: cfg, applied: true, deployment: deployment(0), adviceChecked: true, advice: []advice.Advice{{Code: "SPA104", Message: "m"}}}},
		{name: "advice cleared", obs: observation{config: cfg, applied: true, deployment: deployment(0), adviceChecked: true}},
	}
	p := testutil.MakeProfile("p").Obj()
	for _, pass := range passes {
		recorder := events.NewFakeRecorder(10)
		r := &SchedulerProfileReconciler{recorder: recorder}
		before := p.DeepCopy()
		pass.obs.schedulerName = "p"
		pass.obs.process = dedicated(p)
		setStatus(p, &pass.obs)
		r.recordEvents(before, p)
		close(recorder.Events)
		var got []string
		for e := range recorder.Events {
			got = append(got, e)
		}
		if diff := cmp.Diff(pass.want, got); diff != "" {
			t.Errorf("%s: events (-want +got):\n%s", pass.name, diff)
		}
	}
}
