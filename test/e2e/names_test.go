package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// TestOneSchedulerPerName renames a profile onto the name another one serves (refused, naming the
// owner), swaps two names in three steps, and deletes and recreates a profile, while a sampler
// reads every 250 ms which scheduler processes run which names: no name is ever served by two
// Deployments.
func TestOneSchedulerPerName(t *testing.T) {
	const p, q = "e2e-names-p", "e2e-names-q"
	const x, y, tmp = "e2e-names-x", "e2e-names-y", "e2e-names-tmp"
	applyProfile(t, namedProfile(p, x))
	applyProfile(t, namedProfile(q, y))
	waitServing(t, p, x)
	waitServing(t, q, y)

	s := startNameSampler(t, p+"-scheduler", q+"-scheduler")

	// A rename onto a served name is refused at admission, naming the profile that serves it.
	err := rename(t.Context(), p, y)
	want := fmt.Sprintf("schedulerName %q is served by the scheduler of SchedulerProfile %q", y, q)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("renaming %s onto %s: %v, want a refusal saying %q", p, y, err, want)
	}

	// A swap in three steps: each waits until the name it takes is no longer served.
	start := time.Now()
	renameWhenFree(t, p, tmp)
	waitServing(t, p, tmp)
	renameWhenFree(t, q, x)
	waitServing(t, q, x)
	renameWhenFree(t, p, y)
	waitServing(t, p, y)
	t.Logf("Swapped %s and %s through %s in %s", x, y, tmp, time.Since(start).Round(100*time.Millisecond))

	// Delete and recreate q: its old scheduler serves x until it is gone; the new q takes it back.
	old := &schedulingv1alpha1.SchedulerProfile{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: q}, old); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, q+" to be gone", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKey{Name: q}, &schedulingv1alpha1.SchedulerProfile{}); err == nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
	applyProfile(t, namedProfile(q, x))
	waitServing(t, q, x)

	samples, worst := s.stop()
	t.Logf("%d samples of the running schedulers every 250ms; most Deployments serving one name at once: %d", samples, worst.count)
	// A sample every 250 ms over at least the three rollouts of the swap.
	if samples < 8 {
		t.Errorf("only %d samples: the sampler did not run", samples)
	}
	if worst.count > 1 {
		t.Errorf("%s was served by %v at once", worst.name, worst.deployments)
	}
}

// TestSchedulerHoldsTheNameOfAMemberThatLeft: a member leaves a Scheduler in a revision that
// cannot be placed, and a profile asks for the member's scheduler name at once (past the webhook,
// so that the reconciler decides). The Scheduler's old pods still serve the name, and after the
// new revision is rolled back to the one with the member's entry they serve it again: the
// profile waits (SchedulerNameConflict) the whole time, and a sampler reading every 250 ms which
// processes run which names never sees the name served twice. On main before a Scheduler held
// the names of its running revisions, the name was free as soon as the member left the
// Scheduler's status: the profile's own scheduler served it beside the Scheduler's old pods.
func TestSchedulerHoldsTheNameOfAMemberThatLeft(t *testing.T) {
	const sched, a, b, c, z = "e2e-hold", "e2e-hold-a", "e2e-hold-b", "e2e-hold-c", "e2e-hold-z"
	applyScheduler(t, testutil.MakeScheduler(sched).Obj())
	applyProfile(t, fmt.Sprintf(`{metadata: {name: %s}, spec: {schedulerRef: {name: %s}}}`, a, sched))
	member := applyProfile(t, fmt.Sprintf(`{metadata: {name: %s}, spec: {schedulerRef: {name: %s}, schedulerName: %s}}`, b, sched, z))
	waitServes(t, sched, a, b)
	s := startNameSampler(t, sched+".scheduler", c+"-scheduler")

	// The Scheduler's next revision cannot be placed, and b is not in it.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &schedulingv1alpha1.Scheduler{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Name: sched}, got); err != nil {
			return err
		}
		got.Spec.NodeSelector = map[string]string{"e2e-no-such-label": "x"}
		return k8s.Update(t.Context(), got)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(t.Context(), member); err != nil {
		t.Fatal(err)
	}
	// The status lists a alone; the running pods still have b's entry.
	testutil.Eventually(t, 30*time.Second, "Scheduler "+sched+" to list "+a+" alone", func(ctx context.Context) error {
		got := &schedulingv1alpha1.Scheduler{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: sched}, got); err != nil {
			return err
		}
		if len(got.Status.Profiles) != 1 || got.Status.Profiles[0].Name != a {
			return fmt.Errorf("lists %v", got.Status.Profiles)
		}
		return nil
	})
	applyProfile(t, fmt.Sprintf(`{metadata: {name: %s}, spec: {schedulerName: %s}}`, c, z))
	p := waitCondition(t, c, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonSchedulerNameConflict, 60*time.Second)
	if msg := conditionMessage(p, schedulingv1alpha1.ConditionConfigValid); !strings.Contains(msg, "running revision of Scheduler") {
		t.Errorf("ConfigValid message %q does not name the Scheduler that holds the name", msg)
	}

	// The new revision is rolled back, to the one with b's entry: c still waits.
	testutil.Eventually(t, unschedulableTimeout+90*time.Second, "Scheduler "+sched+" to roll back", func(ctx context.Context) error {
		got := &schedulingv1alpha1.Scheduler{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: sched}, got); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, schedulingv1alpha1.ConditionDegraded); c == nil || c.Reason != schedulingv1alpha1.ReasonRolloutFailed {
			return fmt.Errorf("degraded: %+v", c)
		}
		return nil
	})
	testutil.Consistently(t, 3*time.Second, c+" to keep waiting for "+z, func(ctx context.Context) error {
		got := &schedulingv1alpha1.SchedulerProfile{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: c}, got); err != nil {
			return err
		}
		if cond := meta.FindStatusCondition(got.Status.Conditions, schedulingv1alpha1.ConditionConfigValid); cond == nil || cond.Reason != schedulingv1alpha1.ReasonSchedulerNameConflict {
			return fmt.Errorf("ConfigValid: %+v", cond)
		}
		return nil
	})

	samples, worst := s.stop()
	t.Logf("%d samples of the running schedulers every 250ms; most Deployments serving one name at once: %d", samples, worst.count)
	if samples < 8 {
		t.Errorf("only %d samples: the sampler did not run", samples)
	}
	if worst.count > 1 {
		t.Errorf("%s was served by %v at once", worst.name, worst.deployments)
	}
}

// conditionMessage is the message of a profile's condition, "" without it.
func conditionMessage(p *schedulingv1alpha1.SchedulerProfile, typ string) string {
	if c := meta.FindStatusCondition(p.Status.Conditions, typ); c != nil {
		return c.Message
	}
	return ""
}

// namedProfile is a profile with a scheduler name, which the webhook reviews.
func namedProfile(name, schedulerName string) string {
	return fmt.Sprintf(`{metadata: {name: %s, labels: {%s: "true"}}, spec: {schedulerName: %s}}`, name, webhookLabel, schedulerName)
}

// rename sets a profile's schedulerName.
func rename(ctx context.Context, name, schedulerName string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &schedulingv1alpha1.SchedulerProfile{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		p.Spec.SchedulerName = schedulerName
		return k8s.Update(ctx, p)
	})
}

// renameWhenFree renames a profile, retrying while the webhook refuses it because the name is
// still served.
func renameWhenFree(t *testing.T, name, schedulerName string) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, fmt.Sprintf("%s to take %s", name, schedulerName), func(ctx context.Context) error {
		return rename(ctx, name, schedulerName)
	})
}

// waitServing waits until the profile's scheduler runs one configuration, with schedulerName, and
// the profile is available.
func waitServing(t *testing.T, name, schedulerName string) {
	t.Helper()
	got := waitCondition(t, name, schedulingv1alpha1.ConditionAvailable, metav1.ConditionTrue, "", 60*time.Second)
	waitScheduler(t, name, got.Status.ConfigHash)
	if got.Status.SchedulerName != schedulerName {
		t.Fatalf("%s serves %q, want %q", name, got.Status.SchedulerName, schedulerName)
	}
}

// nameSampler reads, every 250 ms, the configurations that the live scheduler processes of some
// Deployments run, and keeps the worst moment: the most Deployments serving one name.
type nameSampler struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	samples int
	worst   served
}

// served is one scheduler name and the Deployments whose processes ran it in one sample.
type served struct {
	name        string
	count       int
	deployments []string
}

func startNameSampler(t *testing.T, deployments ...string) *nameSampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &nameSampler{cancel: cancel, done: make(chan struct{})}
	names := map[string][]string{} // ConfigMap -> scheduler names, read once: they are immutable
	go func() {
		defer close(s.done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			byName := map[string][]string{}
			for _, d := range deployments {
				hashes := map[string]bool{}
				for _, rep := range runner.Replicas(d) {
					hashes[rep.Hash] = true
				}
				for hash := range hashes {
					cm := strings.TrimSuffix(d, "-scheduler") + "-config-" + hash
					if s, ok := strings.CutSuffix(d, ".scheduler"); ok { // a Scheduler's
						cm = s + ".config-" + hash
					}
					if _, ok := names[cm]; !ok {
						if got := configNames(ctx, cm); got != nil {
							names[cm] = got
						}
					}
					for _, n := range names[cm] {
						if !slices.Contains(byName[n], d) {
							byName[n] = append(byName[n], d)
						}
					}
				}
			}
			s.mu.Lock()
			s.samples++
			for n, ds := range byName {
				if len(ds) > s.worst.count {
					sort.Strings(ds)
					s.worst = served{name: n, count: len(ds), deployments: ds}
				}
			}
			s.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { s.stop() })
	return s
}

func (s *nameSampler) stop() (int, served) {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.worst
}

// configNames are the scheduler names of a rendered configuration; none when it cannot be read.
func configNames(ctx context.Context, configMap string) []string {
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: configMap}, cm); err != nil {
		return nil
	}
	profiles, err := profile.ProfilesIn([]byte(cm.Data["config.yaml"]))
	if err != nil {
		return nil
	}
	var out []string
	for n := range profiles {
		out = append(out, n)
	}
	return out
}
