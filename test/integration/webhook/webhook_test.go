package webhook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/internal/testutil/fifosort"
)

// Paths of the two webhooks, as the markers in webhooks/validators.go set them.
const (
	profilePath   = "/validate-scheduling-schedops-io-v1alpha1-schedulerprofile"
	schedulerPath = "/validate-scheduling-schedops-io-v1alpha1-scheduler"
)

const invalidScoring = `{"scoringStrategy":{"type":"Most"}}`

// invalidProfile is an entry of the invalid-profile table of scheduler/profile.
type invalidProfile struct {
	Name string   `json:"name"`
	Spec string   `json:"spec"`
	Want []string `json:"want"`
}

func readInvalidTable(t *testing.T) []invalidProfile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "scheduler", "profile", "testdata", "invalid", "profiles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var table []invalidProfile
	if err := yaml.UnmarshalStrict(data, &table); err != nil {
		t.Fatalf("Reading the invalid-profile table: %v", err)
	}
	return table
}

// webhookCalls counts the admission reviews the operator's webhook server answered at path.
func webhookCalls(t *testing.T, path string) float64 {
	t.Helper()
	calls, err := testutil.CounterSum("controller_runtime_webhook_requests_total", "webhook", path)
	if err != nil {
		t.Fatal(err)
	}
	return calls
}

// TestInvalidTableRefusedAtCreate creates every profile of the invalid-profile table: the
// apiserver refuses each. The webhook's refusals list exactly the table's errors with their
// fields; a profile that the CRD's own rules refuse first never reaches the webhook, and its
// refusal names the table's fields.
func TestInvalidTableRefusedAtCreate(t *testing.T) {
	ctx := t.Context()
	byWebhook := 0
	for _, tc := range readInvalidTable(t) {
		t.Run(tc.Name, func(t *testing.T) {
			p := &schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "invalid"}}
			if err := yaml.UnmarshalStrict([]byte(tc.Spec), &p.Spec); err != nil {
				t.Fatalf("Parsing the spec: %v", err)
			}
			err := k8sClient.Create(ctx, p)
			if err == nil {
				_ = k8sClient.Delete(context.Background(), p)
				t.Fatal("The invalid profile was stored")
			}
			got := testutil.InvalidCauses(t, err)
			// The apiserver says which refused it; the server's request counter may be counted
			// only after the answer went out.
			if strings.Contains(err.Error(), "admission webhook") {
				byWebhook++
				if diff := cmp.Diff(tc.Want, got); diff != "" {
					t.Errorf("The webhook's refusal (-want +got):\n%s", diff)
				}
				return
			}
			// The CRD's rules name the field, or the object whose rule refused it.
			for _, want := range tc.Want {
				field, _, _ := strings.Cut(want, ": ")
				if !slices.ContainsFunc(got, func(c string) bool {
					at, _, _ := strings.Cut(c, ": ")
					return field == at || strings.HasPrefix(field, at+".") || strings.HasPrefix(field, at+"[")
				}) {
					t.Errorf("The CRD refused the profile with %q, which names neither %s nor an object above it", got, field)
				}
			}
		})
	}
	t.Logf("%d profiles of the table were refused by the webhook, the others by the CRD's rules", byWebhook)
	if byWebhook == 0 {
		t.Error("No profile of the table reached the webhook")
	}
}

// readObjects reads the SchedulerProfiles and Schedulers of a YAML file.
func readObjects(t *testing.T, path string) []client.Object {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var obj client.Object = &schedulingv1alpha1.SchedulerProfile{}
		if meta.Kind == "Scheduler" {
			obj = &schedulingv1alpha1.Scheduler{}
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		objs = append(objs, obj)
	}
	return objs
}

// TestValidProfilesAccepted creates the golden profiles of scheduler/profile and the samples
// (a Scheduler and its members included): the webhook admits each.
func TestValidProfilesAccepted(t *testing.T) {
	ctx := t.Context()
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "scheduler", "profile", "testdata", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("No golden profiles: %v", err)
	}
	samples, _ := filepath.Glob(filepath.Join("..", "..", "..", "config", "samples", "scheduling_*.yaml"))
	before := webhookCalls(t, profilePath) + webhookCalls(t, schedulerPath)
	created := 0
	// One file at a time: some samples have the names of golden profiles.
	for _, f := range slices.Concat(files, samples) {
		var stored []client.Object
		for _, obj := range readObjects(t, f) {
			if err := k8sClient.Create(ctx, obj); err != nil {
				t.Errorf("%s %s of %s refused: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), filepath.Base(f), err)
				continue
			}
			created++
			stored = append(stored, obj)
		}
		for _, obj := range stored {
			if err := k8sClient.Delete(ctx, obj); err != nil {
				t.Errorf("Deleting %s: %v", obj.GetName(), err)
			}
		}
	}
	// The server counts a review once its answer is written: the count may trail the answers.
	testutil.Eventually(t, 5*time.Second, fmt.Sprintf("the webhook to have reviewed the %d creates", created), func(context.Context) error {
		if calls := webhookCalls(t, profilePath) + webhookCalls(t, schedulerPath) - before; int(calls) != created {
			return fmt.Errorf("%v reviews", calls)
		}
		return nil
	})
}

// TestUpdateThatBreaksIsRefused: an update that makes a valid profile invalid is refused, and the
// stored profile is the one before.
func TestUpdateThatBreaksIsRefused(t *testing.T) {
	ctx := t.Context()
	p := testutil.MakeProfile("update-breaks").PluginConfig("NodeResourcesFit", `{"scoringStrategy":{"type":"MostAllocated"}}`).Obj()
	if err := k8sClient.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), p) })
	stored := p.DeepCopy()

	// The operator writes the profile's status meanwhile: update the latest version.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		broken := &schedulingv1alpha1.SchedulerProfile{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(p), broken); err != nil {
			return err
		}
		broken.Spec.PluginConfig[0].Args = runtime.RawExtension{Raw: []byte(invalidScoring)}
		return k8sClient.Update(ctx, broken)
	})
	want := []string{`spec.pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Most": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"`}
	if diff := cmp.Diff(want, testutil.InvalidCauses(t, err)); diff != "" {
		t.Errorf("The refusal (-want +got):\n%s", diff)
	}
	now := &schedulingv1alpha1.SchedulerProfile{}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(p), now); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stored.Spec, now.Spec); diff != "" || now.Generation != stored.Generation {
		t.Errorf("The stored profile changed (generation %d, was %d; -before +now):\n%s", now.Generation, stored.Generation, diff)
	}
}

// TestDryRunRefusesWithoutStoring is `kubectl apply --dry-run=server`: an invalid profile is
// refused, a valid one admitted, and neither is stored.
func TestDryRunRefusesWithoutStoring(t *testing.T) {
	ctx := t.Context()
	bad := testutil.MakeProfile("dry-run-bad").PluginConfig("NodeResourcesFit", invalidScoring).Obj()
	if err := k8sClient.Create(ctx, bad, client.DryRunAll); !apierrors.IsInvalid(err) {
		t.Errorf("Dry-run create of an invalid profile: %v, want a refusal", err)
	}
	good := testutil.MakeProfile("dry-run-good").Obj()
	if err := k8sClient.Create(ctx, good, client.DryRunAll); err != nil {
		t.Errorf("Dry-run create of a valid profile: %v", err)
	}
	for _, p := range []*schedulingv1alpha1.SchedulerProfile{bad, good} {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(p), &schedulingv1alpha1.SchedulerProfile{}); !apierrors.IsNotFound(err) {
			t.Errorf("Profile %s after a dry run: %v, want NotFound", p.Name, err)
		}
	}
}

// TestRefusedSchedulerAndMember: a Scheduler's own settings and a member's combined checks are
// refused at admission with their fields.
func TestRefusedSchedulerAndMember(t *testing.T) {
	ctx := t.Context()
	gates := testutil.MakeScheduler("bad-gates").Obj()
	gates.Spec.FeatureGates = map[string]bool{"NoSuchGate": true}
	if got := testutil.InvalidCauses(t, k8sClient.Create(ctx, gates)); len(got) != 1 || !strings.HasPrefix(got[0], "spec.featureGates.NoSuchGate: ") {
		t.Errorf("Refusal of a Scheduler with an unknown gate: %q", got)
	}

	s := testutil.MakeScheduler("queue-sort").Obj()
	oldest := testutil.MakeProfile("queue-sort-a").SchedulerRef(s.Name).Obj()
	for _, obj := range []client.Object{s, oldest} {
		if err := k8sClient.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), obj) })
	}
	// The default queue sort written out is the same queue sort: the operator writes every queue
	// sort one way, so the member is admitted (a dry run stores nothing).
	spelled := testutil.MakeProfile("queue-sort-b").SchedulerRef(s.Name).Obj()
	spelled.Spec.Plugins = &schedulingv1alpha1.Plugins{QueueSort: schedulingv1alpha1.PluginSet{
		Disabled: []schedulingv1alpha1.Plugin{{Name: "*"}},
		Enabled:  []schedulingv1alpha1.Plugin{{Name: "PrioritySort"}},
	}}
	if err := k8sClient.Create(ctx, spelled, client.DryRunAll); err != nil {
		t.Errorf("A member that writes the default queue sort out: %v", err)
	}
	// Another plugin really sorts the queue otherwise.
	fifosort.Use(t)
	younger := testutil.MakeProfile("queue-sort-b").SchedulerRef(s.Name).Obj()
	younger.Spec.Plugins = &schedulingv1alpha1.Plugins{QueueSort: schedulingv1alpha1.PluginSet{
		Disabled: []schedulingv1alpha1.Plugin{{Name: "*"}},
		Enabled:  []schedulingv1alpha1.Plugin{{Name: fifosort.Name}},
	}}
	if got := testutil.InvalidCauses(t, k8sClient.Create(ctx, younger)); len(got) != 1 || !strings.HasPrefix(got[0], "spec.plugins.queueSort: Invalid value: the profiles of Scheduler queue-sort must sort the queue alike") {
		t.Errorf("Refusal of a member with another queue sort: %q", got)
	}
}

// TestDeleteAndStatusNeverReviewed: the installed configuration sends only CREATE and UPDATE of
// the two resources (not their status subresource), and a status write and a delete reach the
// apiserver without a review.
func TestDeleteAndStatusNeverReviewed(t *testing.T) {
	ctx := t.Context()
	var vwc admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := k8sClient.List(ctx, &vwc); err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, c := range vwc.Items {
		for _, w := range c.Webhooks {
			for _, r := range w.Rules {
				rules = append(rules, w.Name+" "+strings.Join(r.Resources, ",")+" "+strings.Join(operations(r.Operations), ","))
			}
		}
	}
	want := []string{"schedulerprofiles.scheduling.schedops.io schedulerprofiles CREATE,UPDATE", "schedulers.scheduling.schedops.io schedulers CREATE,UPDATE"}
	if diff := cmp.Diff(want, rules); diff != "" {
		t.Errorf("Rules of the installed webhook configuration (-want +got):\n%s", diff)
	}

	p := testutil.MakeProfile("never-reviewed").Obj()
	if err := k8sClient.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	before := webhookCalls(t, profilePath)
	// The operator writes the status too: retry on its conflicts until the test's write is in.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: "Test", Status: metav1.ConditionTrue, Reason: "Test", Message: "written by the test"})
		return k8sClient.Status().Update(ctx, p)
	})
	if err != nil {
		t.Errorf("Status update: %v", err)
	}
	if err := k8sClient.Delete(ctx, p); err != nil {
		t.Errorf("Delete: %v", err)
	}
	if calls := webhookCalls(t, profilePath) - before; calls != 0 {
		t.Errorf("A status update and a delete were sent to the webhook: %v reviews", calls)
	}
}

func operations(ops []admissionregistrationv1.OperationType) []string {
	out := make([]string, 0, len(ops))
	for _, op := range ops {
		out = append(out, string(op))
	}
	return out
}
