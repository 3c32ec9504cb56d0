package node

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// upgradeMaxInFlight is the operator's --upgrade-max-in-flight (its default).
const upgradeMaxInFlight = 1

// schedulerDeployments lists the scheduler Deployments of the operator (not its own).
func schedulerDeployments(ctx context.Context) ([]appsv1.Deployment, error) {
	var list appsv1.DeploymentList
	if err := k8s.List(ctx, &list, client.InNamespace(namespace), client.HasLabels{"app.kubernetes.io/managed-by"}); err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(list.Items, func(d appsv1.Deployment) bool { return d.Name == operatorDeployment || d.DeletionTimestamp != nil })
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// sample is the state of the scheduler Deployments at one moment.
type sample struct {
	at time.Time
	// image is each Deployment's template image; rolled whether that template is rolled out.
	image  map[string]string
	rolled map[string]bool
}

// sampler lists the scheduler Deployments every 250 ms.
type sampler struct {
	mu      sync.Mutex
	samples []sample
}

func startSampler(t *testing.T) *sampler {
	s := &sampler{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if deps, err := schedulerDeployments(ctx); err == nil {
				smp := sample{at: time.Now(), image: map[string]string{}, rolled: map[string]bool{}}
				for i := range deps {
					smp.image[deps[i].Name] = deps[i].Spec.Template.Spec.Containers[0].Image
					smp.rolled[deps[i].Name] = rolledOut(&deps[i])
				}
				s.mu.Lock()
				s.samples = append(s.samples, smp)
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// since returns the samples taken from mark on.
func (s *sampler) since(mark time.Time) []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sample
	for _, smp := range s.samples {
		if !smp.at.Before(mark) {
			out = append(out, smp)
		}
	}
	return out
}

// maxInFlight returns the most Deployments seen at once on image and not rolled out.
func maxInFlight(samples []sample, image string) (int, time.Time) {
	most, at := 0, time.Time{}
	for _, smp := range samples {
		n := 0
		for name, im := range smp.image {
			if im == image && !smp.rolled[name] {
				n++
			}
		}
		if n > most {
			most, at = n, smp.at
		}
	}
	return most, at
}

// setSchedulerImage restarts the operator with image as its scheduler image, as an upgrade of the
// operator does, and waits until the new operator pod is available.
func setSchedulerImage(t *testing.T, image string) {
	t.Helper()
	dep := &appsv1.Deployment{}
	if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: operatorDeployment}, dep); err != nil {
		t.Fatal(err)
	}
	base := dep.DeepCopy()
	env := dep.Spec.Template.Spec.Containers[0].Env
	for i := range env {
		if env[i].Name == schedulerImageEnv {
			env[i].Value = image
		}
	}
	if err := k8s.Patch(t.Context(), dep, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	if err := waitOperator(t.Context(), dep.Generation, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
}

// waitAllOn waits until every scheduler Deployment has rolled out image.
func waitAllOn(t *testing.T, image string, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, "every scheduler on "+image, func(ctx context.Context) error {
		deps, err := schedulerDeployments(ctx)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := deploymentRolled(ctx, d.Name, image); err != nil {
				return err
			}
		}
		return nil
	})
}

// ownerConditions returns the conditions of the SchedulerProfile or Scheduler that owns a
// scheduler Deployment.
func ownerConditions(ctx context.Context, d *appsv1.Deployment) ([]metav1.Condition, error) {
	if name := d.Labels[schedulingv1alpha1.LabelScheduler]; name != "" {
		s := &schedulingv1alpha1.Scheduler{}
		err := k8s.Get(ctx, types.NamespacedName{Name: name}, s)
		return s.Status.Conditions, err
	}
	p := &schedulingv1alpha1.SchedulerProfile{}
	err := k8s.Get(ctx, types.NamespacedName{Name: d.Labels[schedulingv1alpha1.LabelProfile]}, p)
	return p.Status.Conditions, err
}

// TestUpgradeWave: two more profiles beside the samples (six schedulers: enough for a wave of one
// at a time, each of which took 12 to 16 s on the real node); the operator restarted with a new
// scheduler image that works rolls the schedulers one at a time; with an image that cannot be
// pulled, then with one whose scheduler crash-loops, the first scheduler is rolled back and the
// others never leave the image that works; back to the first image, all settle without a rollback.
func TestUpgradeWave(t *testing.T) {
	const extra = 2
	for i := range extra {
		doc := fmt.Sprintf("apiVersion: scheduling.schedops.io/v1alpha1\nkind: SchedulerProfile\nmetadata: {name: node-wave-%d}\nspec: {}\n", i)
		applyKubectl(t, doc, "-f", "-")
	}
	t.Cleanup(func() {
		for i := range extra {
			_ = k8s.Delete(context.Background(), &schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-wave-%d", i)}})
		}
	})
	for i := range extra {
		waitAvailable(t, fmt.Sprintf("node-wave-%d", i), 3*time.Minute)
	}
	waitAllOn(t, img, 2*time.Minute)
	deps, err := schedulerDeployments(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	first := deps[0].Name
	t.Logf("%d schedulers on %s; the first in the wave's order is %s", len(deps), img, first)
	s := startSampler(t)

	// A new image that works: every scheduler rolls, never more than upgradeMaxInFlight at once.
	mark := time.Now()
	setSchedulerImage(t, imageV2)
	waitAllOn(t, imageV2, 5*time.Minute)
	most, _ := maxInFlight(s.since(mark), imageV2)
	t.Logf("upgrade to %s: %d schedulers rolled in %s, at most %d at once", imageV2, len(deps), time.Since(mark).Round(time.Second), most)
	if most > upgradeMaxInFlight {
		t.Errorf("%d schedulers rolled at once to %s, want at most %d", most, imageV2, upgradeMaxInFlight)
	}

	// Images whose pods cannot start: the first scheduler is rolled back, the wave stops there.
	for _, bad := range []struct{ image, why string }{
		{imageMissing, "cannot be pulled"},
		{imageCrash, "crash-loops"},
	} {
		mark = time.Now()
		setSchedulerImage(t, bad.image)
		testutil.Eventually(t, 4*time.Minute, first+" to be rolled back from "+bad.image, func(ctx context.Context) error {
			d := &appsv1.Deployment{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: first}, d); err != nil {
				return err
			}
			if d.Annotations[schedulingv1alpha1.AnnotationImageRolledBack] != bad.image {
				return fmt.Errorf("annotation %s=%q", schedulingv1alpha1.AnnotationImageRolledBack, d.Annotations[schedulingv1alpha1.AnnotationImageRolledBack])
			}
			return deploymentRolled(ctx, first, imageV2)
		})
		rolledBack := time.Since(mark)
		testutil.Eventually(t, 30*time.Second, "the owner of "+first+" to say Degraded=True/RolloutFailed", func(ctx context.Context) error {
			d := &appsv1.Deployment{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: first}, d); err != nil {
				return err
			}
			conds, err := ownerConditions(ctx, d)
			if err != nil {
				return err
			}
			if c := meta.FindStatusCondition(conds, schedulingv1alpha1.ConditionDegraded); c == nil || c.Status != metav1.ConditionTrue || c.Reason != schedulingv1alpha1.ReasonRolloutFailed {
				return fmt.Errorf("Degraded %+v", c)
			}
			return nil
		})
		// The wave stays stopped: watch a while longer.
		time.Sleep(15 * time.Second)
		for _, smp := range s.since(mark) {
			for name, im := range smp.image {
				if name != first && im != imageV2 {
					t.Errorf("%s: %s had image %s while the wave to an image that %s was stopped at %s", smp.at.Format("15:04:05.000"), name, im, bad.why, first)
				}
			}
		}
		t.Logf("an image that %s: %s rolled back %s after the operator restarted; the other %d schedulers stayed on %s",
			bad.why, first, rolledBack.Round(time.Second), len(deps)-1, imageV2)
	}

	// Back to the first image: every scheduler settles, none is rolled back.
	mark = time.Now()
	setSchedulerImage(t, img)
	waitAllOn(t, img, 5*time.Minute)
	most, _ = maxInFlight(s.since(mark), img)
	t.Logf("back to %s: %d schedulers rolled in %s, at most %d at once", img, len(deps), time.Since(mark).Round(time.Second), most)
	if most > upgradeMaxInFlight {
		t.Errorf("%d schedulers rolled at once to %s, want at most %d", most, img, upgradeMaxInFlight)
	}
	deps, err = schedulerDeployments(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i := range deps {
		if got := deps[i].Annotations[schedulingv1alpha1.AnnotationImageRolledBack]; got == img {
			t.Errorf("%s was rolled back from %s", deps[i].Name, img)
		}
		conds, err := ownerConditions(t.Context(), &deps[i])
		if err != nil {
			t.Fatal(err)
		}
		if c := meta.FindStatusCondition(conds, schedulingv1alpha1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
			t.Errorf("The owner of %s is still Degraded after the wave settled: %+v", deps[i].Name, c)
		}
	}
}
