package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestControllerRefusesPodsPastTheCaps: the operator runs with the default caps on scheduler
// pods (4 CPU, 8Gi of memory, no toleration of every taint). A profile stored without the
// webhook whose scheduler pods request more CPU is refused in status and gets no Deployment; a
// running profile changed to tolerate every taint is refused in status, and its scheduler keeps
// the template it runs; a Scheduler whose pods' memory limit is past the cap is Degraded and runs
// nothing.
func TestControllerRefusesPodsPastTheCaps(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	refused := conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonInvalidConfig}

	big := uniqueName("caps-big")
	k.createProfile(t, testutil.MakeProfile(big).SchedulerSettings(schedulingv1alpha1.SchedulerSettings{
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}},
	}).Obj())
	p := k.waitForConditions(t, big, refused)
	want := "the scheduler would refuse this configuration, so it is not rolled out: spec.scheduler.resources.requests[cpu]: Forbidden: a cpu request of 8 is more than scheduler pods may have; the operator allows at most 4 (--max-scheduler-cpu, set by the cluster admin)"
	if msg := findCondition(p, schedulingv1alpha1.ConditionConfigValid).Message; msg != want {
		t.Errorf("ConfigValid message %q, want %q", msg, want)
	}

	running := uniqueName("caps-running")
	k.createProfile(t, testutil.MakeProfile(running).Obj())
	before := k.waitForRollout(t, running)
	k.markDeploymentAvailable(t, before.Status.DeploymentName)
	template := k.liveDeployment(t, before.Status.DeploymentName).Spec.Template
	k.updateProfile(t, running, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.Scheduler.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	})
	p = k.waitForConditions(t, running, refused,
		conditionWant{schedulingv1alpha1.ConditionDegraded, metav1.ConditionTrue, schedulingv1alpha1.ReasonInvalidConfigNotRolledOut})
	want = "spec.scheduler.tolerations[0]: Forbidden: a toleration without a key and with operator Exists tolerates every taint"
	if msg := findCondition(p, schedulingv1alpha1.ConditionConfigValid).Message; !strings.Contains(msg, want) {
		t.Errorf("ConfigValid message %q does not contain %q", msg, want)
	}

	s := testutil.MakeScheduler(uniqueName("caps-shared")).Obj()
	s.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi")}
	k.createScheduler(t, s)
	k.createProfile(t, testutil.MakeProfile(uniqueName("caps-member")).SchedulerRef(s.Name).Obj())
	k.waitForDegradedScheduler(t, s.Name, schedulingv1alpha1.ReasonInvalidConfigNotRolledOut,
		"spec.resources.limits[memory]: Forbidden: a memory limit of 16Gi is more than scheduler pods may have; the operator allows at most 8Gi (--max-scheduler-memory, set by the cluster admin)")

	testutil.Consistently(t, 2*time.Second, "nothing rolled out past the caps", func(ctx context.Context) error {
		for _, d := range []string{big + "-scheduler", s.Name + ".scheduler"} {
			if err := k.deploymentAbsent(ctx, d); err != nil {
				return err
			}
		}
		if diff := cmp.Diff(template, k.liveDeployment(t, before.Status.DeploymentName).Spec.Template); diff != "" {
			return fmt.Errorf("the running scheduler's template changed (-before +after):\n%s", diff)
		}
		return nil
	})
}
