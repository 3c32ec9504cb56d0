package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestControllerSecretConsentNamesItsUsers: team A's Secret consents to A's profile only. Team
// B's profile whose extender names it is refused (SecretInvalid, naming the annotation and B)
// and gets no scheduler, so nothing of the Secret is mounted for B, while A's scheduler mounts
// it. Once the Secret consents to every profile ("*"), B's scheduler rolls out with it, without
// a change of B's spec. On main before this change B's profile rolled out and its Deployment
// mounted A's Secret: the label was the whole consent.
func TestControllerSecretConsentNamesItsUsers(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	a, b := uniqueName("consent-a"), uniqueName("consent-b")
	secret := extenderSecret(a+"-client", a, pair(testCert1, testKey1))
	k.createSecret(t, secret)
	for _, name := range []string{a, b} {
		p := testutil.MakeProfile(name).Obj()
		p.Spec.Extenders = []schedulingv1alpha1.Extender{tlsExtender(secret.Name)}
		k.createProfile(t, p)
	}

	ranA := k.waitForRollout(t, a)
	checkSecretMounted(t, k.liveDeployment(t, ranA.Status.DeploymentName), secret.Name)
	k.waitForConfigValidMessage(t, b, secretInvalid, fmt.Sprintf(`Secret %s/%s, named in an extender's tlsConfig.secretRef, does not consent to %s: its annotation %s does not list %q`,
		operatorNamespace, secret.Name, b, schedulingv1alpha1.AnnotationExtenderTLSFor, b))
	testutil.Consistently(t, 2*time.Second, "only A's scheduler to mount A's Secret", func(ctx context.Context) error {
		if err := k.deploymentAbsent(ctx, b+"-scheduler"); err != nil {
			return err
		}
		mounting, err := k.deploymentsMounting(ctx, secret.Name)
		if err != nil {
			return err
		}
		if want := []string{ranA.Status.DeploymentName}; !slices.Equal(mounting, want) {
			return fmt.Errorf("the Deployments %v mount Secret %s, want %v", mounting, secret.Name, want)
		}
		return nil
	})

	k.annotateSecret(t, secret, "*")
	ranB := k.waitForRollout(t, b)
	checkSecretMounted(t, k.liveDeployment(t, ranB.Status.DeploymentName), secret.Name)
}

// TestControllerRollbackChecksSecretConsent: a rollback applies an earlier pod template again,
// with the Secrets it mounts, so it is checked like a rollout. The profile ran available with a
// Secret (revision 1), then dropped its extender (revision 2), and the Secret's owner withdrew
// the consent; when revision 2 fails, the Deployment is not returned to revision 1, and the
// status says why. On main before this change the rollback mounted the Secret again, which no
// longer consented.
func TestControllerRollbackChecksSecretConsent(t *testing.T) {
	k := suiteCluster()
	k.startOperatorWithRollout(t, controllers.RolloutThresholds{Unschedulable: testUnschedulable})
	name := uniqueName("consent-rollback")
	secret := extenderSecret(name+"-client", name, pair(testCert1, testKey1))
	k.createSecret(t, secret)
	p := testutil.MakeProfile(name).Obj()
	p.Spec.Extenders = []schedulingv1alpha1.Extender{tlsExtender(secret.Name)}
	k.createProfile(t, p)
	k.waitForRollout(t, name)
	first := k.liveDeployment(t, name+"-scheduler")
	checkSecretMounted(t, first, secret.Name)
	rev1 := first.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]
	k.createReplicaSet(t, first, "h1")
	k.markDeploymentAvailable(t, first.Name)
	k.waitForLastAvailable(t, name, rev1)

	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) { p.Spec.Extenders = nil })
	second := k.waitForRevision(t, first.Name, func(rev string) bool { return rev != rev1 })
	rev2 := second.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]
	k.annotateSecret(t, secret, "someone-else")
	k.createUnschedulablePod(t, k.createReplicaSet(t, second, "h2"))

	failed := k.waitForConditions(t, name, conditionWant{schedulingv1alpha1.ConditionDegraded, metav1.ConditionTrue, schedulingv1alpha1.ReasonRolloutFailed})
	refusal := fmt.Sprintf(`Secret %s/%s, which that revision mounts, does not consent to %s: its annotation %s does not list %q`,
		operatorNamespace, secret.Name, name, schedulingv1alpha1.AnnotationExtenderTLSFor, name)
	if !strings.HasPrefix(failed.Status.RollbackRefusal, refusal) || failed.Status.FailedRevision != rev2 {
		t.Errorf("failedRevision %q (want %q), rollbackRefusal %q (want it to start with %q)", failed.Status.FailedRevision, rev2, failed.Status.RollbackRefusal, refusal)
	}
	degraded := findCondition(failed, schedulingv1alpha1.ConditionDegraded).Message
	if want := "the Deployment is not returned to revision " + rev1; !strings.Contains(degraded, want) || !strings.Contains(degraded, refusal) {
		t.Errorf("Degraded says %q, want %q and the refusal", degraded, want)
	}
	testutil.Consistently(t, 2*time.Second, "the Deployment to stay on revision "+rev2, func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: first.Name}, d); err != nil {
			return err
		}
		if rev := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]; rev != rev2 {
			return fmt.Errorf("the Deployment went to revision %s", rev)
		}
		return nil
	})
}

// deploymentsMounting are the Deployments of the operator's namespace whose pod template mounts
// the Secret, sorted.
func (k *cluster) deploymentsMounting(ctx context.Context, secret string) ([]string, error) {
	var list appsv1.DeploymentList
	if err := k.admin.List(ctx, &list, client.InNamespace(operatorNamespace)); err != nil {
		return nil, err
	}
	var names []string
	for _, d := range list.Items {
		if slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == secret }) {
			names = append(names, d.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// annotateSecret sets who a Secret consents to (schedulingv1alpha1.AnnotationExtenderTLSFor).
func (k *cluster) annotateSecret(t *testing.T, secret *corev1.Secret, users string) {
	t.Helper()
	if err := k.admin.Get(t.Context(), client.ObjectKeyFromObject(secret), secret); err != nil {
		t.Fatal(err)
	}
	secret.Annotations[schedulingv1alpha1.AnnotationExtenderTLSFor] = users
	if err := k.admin.Update(t.Context(), secret); err != nil {
		t.Fatalf("Updating Secret %s: %v", secret.Name, err)
	}
}
