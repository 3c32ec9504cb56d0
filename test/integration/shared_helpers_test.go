package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// createScheduler creates s as the administrator and deletes it and its objects when the test
// ends (envtest runs no garbage collector).
func (k *cluster) createScheduler(t *testing.T, s *schedulingv1alpha1.Scheduler) {
	t.Helper()
	if err := k.admin.Create(t.Context(), s); err != nil {
		t.Fatalf("Creating Scheduler %s: %v", s.Name, err)
	}
	name := s.Name
	t.Cleanup(func() { k.deleteSchedulerAndObjects(t, name) })
}

// deleteSchedulerAndObjects deletes a Scheduler and what it owns, as the garbage collector would.
func (k *cluster) deleteSchedulerAndObjects(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := &schedulingv1alpha1.Scheduler{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := client.IgnoreNotFound(k.admin.Delete(ctx, s)); err != nil {
		t.Errorf("Deleting Scheduler %s: %v", name, err)
	}
	k.deleteObjectsOf(ctx, t, schedulingv1alpha1.LabelScheduler, name)
}

func (k *cluster) getScheduler(ctx context.Context, name string) (*schedulingv1alpha1.Scheduler, error) {
	s := &schedulingv1alpha1.Scheduler{}
	return s, k.admin.Get(ctx, client.ObjectKey{Name: name}, s)
}

// waitForScheduler waits until the Scheduler's status describes its generation and check
// accepts it, and returns it as it was then.
func (k *cluster) waitForScheduler(t *testing.T, name, what string, check func(*schedulingv1alpha1.Scheduler) error) *schedulingv1alpha1.Scheduler {
	t.Helper()
	var got *schedulingv1alpha1.Scheduler
	testutil.Eventually(t, reconcileTimeout, "Scheduler "+name+" "+what, func(ctx context.Context) error {
		s, err := k.getScheduler(ctx, name)
		if err != nil {
			return err
		}
		if s.Status.ObservedGeneration != s.Generation {
			return fmt.Errorf("status.observedGeneration is %d, generation %d", s.Status.ObservedGeneration, s.Generation)
		}
		if err := check(s); err != nil {
			return err
		}
		got = s
		return nil
	})
	return got
}

// servesProfiles accepts a Scheduler whose status lists exactly the given profile names.
func servesProfiles(names ...string) func(*schedulingv1alpha1.Scheduler) error {
	return func(s *schedulingv1alpha1.Scheduler) error {
		var got []string
		for _, m := range s.Status.Profiles {
			got = append(got, m.Name)
		}
		if fmt.Sprint(got) != fmt.Sprint(names) || int(s.Status.ProfileCount) != len(names) {
			return fmt.Errorf("serves %v (count %d), want %v", got, s.Status.ProfileCount, names)
		}
		return nil
	}
}

// schedulerCondition accepts a Scheduler with the condition.
func schedulerCondition(want conditionWant) func(*schedulingv1alpha1.Scheduler) error {
	return func(s *schedulingv1alpha1.Scheduler) error {
		c := meta.FindStatusCondition(s.Status.Conditions, want.typ)
		if c == nil || c.Status != want.status || c.Reason != want.reason {
			return fmt.Errorf("%s is %v, want %v", want.typ, c, want)
		}
		return nil
	}
}

// configEntries reads a ConfigMap and returns its profiles, as written, by scheduler name, in
// the order of the file.
func (k *cluster) configEntries(t *testing.T, configMap string) (map[string]string, []string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: configMap}, cm); err != nil {
		t.Fatalf("Reading ConfigMap %s: %v", configMap, err)
	}
	var doc struct {
		Profiles []map[string]any `json:"profiles"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &doc); err != nil {
		t.Fatalf("Parsing ConfigMap %s: %v", configMap, err)
	}
	entries := map[string]string{}
	var order []string
	for _, p := range doc.Profiles {
		name := fmt.Sprint(p["schedulerName"])
		data, err := yaml.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		entries[name] = string(data)
		order = append(order, name)
	}
	return entries, order
}

// schedulerDeployment reads the Deployment of a Scheduler.
func (k *cluster) schedulerDeployment(t *testing.T, s *schedulingv1alpha1.Scheduler) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: s.Status.DeploymentName}, d); err != nil {
		t.Fatalf("Reading Deployment %s: %v", s.Status.DeploymentName, err)
	}
	return d
}

// waitForDegradedScheduler waits until the Scheduler is Degraded for reason, with a message that
// contains text. A refused Scheduler's observedGeneration stays at what it runs, so
// waitForScheduler, which waits for it, does not serve here.
func (k *cluster) waitForDegradedScheduler(t *testing.T, name, reason, text string) {
	t.Helper()
	testutil.Eventually(t, reconcileTimeout, fmt.Sprintf("Scheduler %s to be Degraded (%s) saying %q", name, reason, text), func(ctx context.Context) error {
		s, err := k.getScheduler(ctx, name)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, schedulingv1alpha1.ConditionDegraded)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason || !strings.Contains(c.Message, text) {
			return fmt.Errorf("Degraded is %+v", c)
		}
		return nil
	})
}
