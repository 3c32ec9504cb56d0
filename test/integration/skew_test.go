package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// schedulerVersion is the version of the scheduler the operator ships (k8s.io/kubernetes in go.mod).
const schedulerVersion = "v1.37.2"

var versionSkew = conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonVersionSkew}

// startOperatorAt runs the operator with the apiserver's version faked as gitVersion.
func (k *cluster) startOperatorAt(t *testing.T, gitVersion string) *framework.Operator {
	t.Helper()
	k.ensureOperatorNamespace(t)
	o := operatorOptions
	o.ServerVersion = controllers.ServerVersionFunc(func() (*apimachineryversion.Info, error) {
		return &apimachineryversion.Info{GitVersion: gitVersion}, nil
	})
	return framework.StartOperator(t, cfg, o)
}

// TestVersionSkew: against an apiserver faked at v1.36, a new profile and a new Scheduler are
// refused with VersionSkew, naming both versions, with an event, and get no Deployment; a
// running profile's change is refused and its Deployment stays as it was. Back at v1.37 they
// roll out.
func TestVersionSkew(t *testing.T) {
	k := suiteCluster()
	running := k.createProfile(t, testutil.MakeProfile(uniqueName("skew-running")).Obj())
	op := k.startOperatorAt(t, "v1.37.0")
	k.waitForRollout(t, running.Name)
	before := &appsv1.Deployment{}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: running.Name + "-scheduler"}, before); err != nil {
		t.Fatal(err)
	}
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}

	const server = "v1.36.5"
	op = k.startOperatorAt(t, server)
	fresh := k.createProfile(t, testutil.MakeProfile(uniqueName("skew-new")).Obj())
	sched := testutil.MakeScheduler(uniqueName("skew-shared")).Obj()
	k.createScheduler(t, sched)
	member := k.createProfile(t, testutil.MakeProfile(uniqueName("skew-member")).SchedulerRef(sched.Name).Obj())
	k.updateProfile(t, running.Name, func(p *schedulingv1alpha1.SchedulerProfile) { p.Spec.PercentageOfNodesToScore = ptr.To[int32](40) })

	for _, name := range []string{fresh.Name, running.Name, member.Name} {
		p := k.waitForConditions(t, name, versionSkew,
			conditionWant{schedulingv1alpha1.ConditionDegraded, metav1.ConditionTrue, schedulingv1alpha1.ReasonVersionSkew})
		msg := findCondition(p, schedulingv1alpha1.ConditionConfigValid).Message
		t.Logf("SchedulerProfile %s: ConfigValid: %s", name, msg)
		if !strings.Contains(msg, schedulerVersion) || !strings.Contains(msg, server) {
			t.Errorf("SchedulerProfile %s: the message %q does not name both %s and %s", name, msg, schedulerVersion, server)
		}
	}
	k.waitForEvent(t, fresh, "Warning", schedulingv1alpha1.ReasonVersionSkew, server)
	testutil.Eventually(t, reconcileTimeout, "Scheduler "+sched.Name+" to be refused for the version skew", func(ctx context.Context) error {
		s, err := k.getScheduler(ctx, sched.Name)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, schedulingv1alpha1.ConditionDegraded)
		if c == nil || c.Reason != schedulingv1alpha1.ReasonVersionSkew || !strings.Contains(c.Message, server) || !strings.Contains(c.Message, schedulerVersion) {
			return fmt.Errorf("Degraded is %+v", c)
		}
		return nil
	})
	// Nothing was applied: no Deployment for the new ones, the running one as it was.
	testutil.Consistently(t, 3*time.Second, "no Deployment to be created or changed", func(ctx context.Context) error {
		for _, name := range []string{fresh.Name + "-scheduler", sched.Name + ".scheduler"} {
			if err := k.deploymentAbsent(ctx, name); err != nil {
				return err
			}
		}
		d := &appsv1.Deployment{}
		if err := k.admin.Get(ctx, client.ObjectKeyFromObject(before), d); err != nil {
			return err
		}
		if d.ResourceVersion != before.ResourceVersion {
			return fmt.Errorf("Deployment %s changed: resourceVersion %s, was %s", d.Name, d.ResourceVersion, before.ResourceVersion)
		}
		return nil
	})
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}

	// The control plane is upgraded: everything rolls out.
	k.startOperatorAt(t, "v1.37.0")
	for _, name := range []string{fresh.Name, running.Name} {
		k.waitForRollout(t, name)
	}
	k.waitForConditions(t, member.Name, configValid)
	testutil.Eventually(t, reconcileTimeout, "the Deployments to roll out", func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(ctx, client.ObjectKeyFromObject(before), d); err != nil {
			return err
		}
		if d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash] == before.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash] {
			return fmt.Errorf("Deployment %s still runs the configuration of before", d.Name)
		}
		for _, name := range []string{fresh.Name + "-scheduler", sched.Name + ".scheduler"} {
			if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, &appsv1.Deployment{}); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestVersionSkewUnsupported: against an apiserver two minors newer than the scheduler, beyond
// what the skew policy supports, the profile rolls out all the same and says so in Degraded.
func TestVersionSkewUnsupported(t *testing.T) {
	k := suiteCluster()
	const server = "v1.39.1"
	k.startOperatorAt(t, server)
	p := k.createProfile(t, testutil.MakeProfile(uniqueName("skew-old")).Obj())
	p = k.waitForConditions(t, p.Name, configValid,
		conditionWant{schedulingv1alpha1.ConditionDegraded, metav1.ConditionTrue, schedulingv1alpha1.ReasonUnsupportedVersionSkew})
	msg := findCondition(p, schedulingv1alpha1.ConditionDegraded).Message
	t.Logf("Degraded: %s", msg)
	if !strings.Contains(msg, schedulerVersion) || !strings.Contains(msg, server) {
		t.Errorf("The message %q does not name both %s and %s", msg, schedulerVersion, server)
	}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: p.Name + "-scheduler"}, &appsv1.Deployment{}); err != nil {
		t.Errorf("The scheduler Deployment: %v", err)
	}
}
