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
