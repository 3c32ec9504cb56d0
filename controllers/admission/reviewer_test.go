package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/scheme"
	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/internal/testutil/fifosort"
	"github.com/schedops/scheduler-profile-operator/webhooks"
)

const invalidScoring = `{"scoringStrategy":{"type":"Most"}}`

var testSettings = plan.Settings{Namespace: "ops", Image: "example.com/spo:v1"}

// fakePlanner is the reconcilers' planning on a fake client holding objs, with the cache's indexes.
func fakePlanner(objs ...client.Object) plan.Planner {
	b := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...)
	for _, i := range plan.FieldIndexes(func(*appsv1.Deployment) bool { return false }, nil) {
		b = b.WithIndex(i.Obj, i.Field, i.Extract)
	}
	return plan.Planner{Reader: b.Build(), Settings: testSettings}
}

// profileValidatorOf is the webhook's check of profiles with the reconcilers' planning pl,
// reading the profiles from its reader.
func profileValidatorOf(pl plan.Planner) *webhooks.ProfileValidator {
	return webhooks.NewProfileValidator(&Reviewer{pl}, pl.Reader, nil)
}

// schedulerValidatorOf is the webhook's check of Schedulers with the planning pl.
func schedulerValidatorOf(pl plan.Planner) *webhooks.SchedulerValidator {
	return webhooks.NewSchedulerValidator(&Reviewer{pl})
}

// createdAt sets a stored object's creation time, which decides name and queue-sort conflicts.
func createdAt[T client.Object](obj T, minutesAgo int) T {
	obj.SetCreationTimestamp(metav1.NewTime(time.Now().Add(-time.Duration(minutesAgo) * time.Minute)))
	return obj
}

func TestProfileValidatorCreate(t *testing.T) {
	fifosort.Use(t)
	queueSortPrioritySort := &schedulingv1alpha1.Plugins{QueueSort: schedulingv1alpha1.PluginSet{
		Disabled: []schedulingv1alpha1.Plugin{{Name: "*"}},
		Enabled:  []schedulingv1alpha1.Plugin{{Name: "PrioritySort"}},
	}}
	queueSortFIFO := &schedulingv1alpha1.Plugins{QueueSort: schedulingv1alpha1.PluginSet{
		Disabled: []schedulingv1alpha1.Plugin{{Name: "*"}},
		Enabled:  []schedulingv1alpha1.Plugin{{Name: fifosort.Name}},
	}}
	tests := []struct {
		name    string
		stored  []client.Object
		profile *schedulingv1alpha1.SchedulerProfile
		// wantCauses are the refusal's fields and messages (prefixes of the messages).
		wantCauses   []string
		wantWarnings []string
	}{
		{name: "valid", profile: testutil.MakeProfile("ok").Obj()},
		{name: "invalid args",
			profile:    testutil.MakeProfile("bad").PluginConfig("NodeResourcesFit", invalidScoring).Obj(),
			wantCauses: []string{`spec.pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Most"`}},
		{name: "every error is listed",
			profile:    testutil.MakeProfile("bad").PluginConfig("InterPodAffinity", `{"a":1,"b":2}`).Obj(),
			wantCauses: []string{`spec.pluginConfig[0].args.a: Forbidden: unknown field`, `spec.pluginConfig[0].args.b: Forbidden: unknown field`}},
		{name: "scheduler name of an older profile",
			stored:     []client.Object{createdAt(testutil.MakeProfile("first").SchedulerName("team").Obj(), 5)},
			profile:    testutil.MakeProfile("second").SchedulerName("team").Obj(),
			wantCauses: []string{`spec.schedulerName: Invalid value: "team": schedulerName "team" is already claimed by the older SchedulerProfile "first"`}},
		{name: "defaulted scheduler name of an older profile",
			stored:     []client.Object{createdAt(testutil.MakeProfile("first").SchedulerName("team").Obj(), 5)},
			profile:    testutil.MakeProfile("team").Obj(),
			wantCauses: []string{`metadata.name: Invalid value: "team": schedulerName "team" is already claimed by the older SchedulerProfile "first"`}},
		{name: "bad feature gate",
			profile:    testutil.MakeProfile("gates").SchedulerSettings(schedulingv1alpha1.SchedulerSettings{FeatureGates: map[string]bool{"NoSuchGate": true}}).Obj(),
			wantCauses: []string{`spec.scheduler.featureGates.NoSuchGate: `}},
		{name: "member of a missing Scheduler: warning only",
			profile:      testutil.MakeProfile("m").SchedulerRef("later").Obj(),
			wantWarnings: []string{`spec.schedulerRef.name: Scheduler "later" does not exist`}},
		{name: "invalid member of a missing Scheduler",
			profile:      testutil.MakeProfile("m").SchedulerRef("later").PluginConfig("NodeResourcesFit", invalidScoring).Obj(),
			wantCauses:   []string{`spec.pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Most"`},
			wantWarnings: []string{`spec.schedulerRef.name: Scheduler "later" does not exist`}},
		{name: "member that sorts the queue unlike the oldest member",
			stored: []client.Object{
				createdAt(testutil.MakeScheduler("shared").Obj(), 10),
				createdAt(testutil.MakeProfile("oldest").SchedulerRef("shared").Obj(), 10),
			},
			profile: func() *schedulingv1alpha1.SchedulerProfile {
				p := testutil.MakeProfile("younger").SchedulerRef("shared").Obj()
				p.Spec.Plugins = queueSortFIFO
				return p
			}(),
			wantCauses: []string{`spec.plugins.queueSort: Invalid value: the profiles of Scheduler shared must sort the queue alike: the Scheduler sorts its queue with the default (PrioritySort) (as its oldest member, SchedulerProfile oldest, does)`}},
		{name: "member that spells out the default queue sort",
			stored: []client.Object{
				createdAt(testutil.MakeScheduler("shared").Obj(), 10),
				createdAt(testutil.MakeProfile("oldest").SchedulerRef("shared").Obj(), 10),
			},
			profile: func() *schedulingv1alpha1.SchedulerProfile {
				p := testutil.MakeProfile("younger").SchedulerRef("shared").Obj()
				p.Spec.Plugins = queueSortPrioritySort
				return p
			}()},
		{name: "member whose scheduler name an older dedicated profile has",
			stored: []client.Object{
				createdAt(testutil.MakeScheduler("shared").Obj(), 10),
				createdAt(testutil.MakeProfile("alone").SchedulerName("x").Obj(), 10),
			},
			profile:    testutil.MakeProfile("member").SchedulerRef("shared").SchedulerName("x").Obj(),
			wantCauses: []string{`spec.schedulerName: Invalid value: "x": schedulerName "x" is already claimed by the older SchedulerProfile "alone"`}},
		{name: "member with the Scheduler's extender, which is invalid",
			stored: []client.Object{
				createdAt(testutil.MakeScheduler("shared").Extender(schedulingv1alpha1.Extender{URLPrefix: "http://a", PrioritizeVerb: ptr.To("prioritize")}).Obj(), 10),
			},
			profile:    testutil.MakeProfile("member").SchedulerRef("shared").Obj(),
			wantCauses: []string{`spec.extenders[0].weight: Invalid value: 0: must have a positive weight`}},
		{name: "inline private key (stored before the CRD refused it)",
			profile: func() *schedulingv1alpha1.SchedulerProfile {
				p := testutil.MakeProfile("inline-key").Obj()
				p.Spec.Extenders = []schedulingv1alpha1.Extender{{URLPrefix: "https://a", Weight: ptr.To[int64](1), PrioritizeVerb: ptr.To("prioritize"),
					TLSConfig: &schedulingv1alpha1.ExtenderTLSConfig{KeyData: []byte("key")}}}
				return p
			}(),
			wantCauses: []string{`spec.extenders[0].tlsConfig.keyData: Forbidden: keyData is not accepted`}},
		{name: "member of a Scheduler refused for its own gates: admitted, with a warning",
			stored: []client.Object{
				createdAt(func() *schedulingv1alpha1.Scheduler {
					s := testutil.MakeScheduler("shared").Obj()
					s.Spec.FeatureGates = map[string]bool{"NoSuchGate": true}
					return s
				}(), 10),
			},
			profile:      testutil.MakeProfile("member").SchedulerRef("shared").Obj(),
			wantWarnings: []string{`spec.schedulerRef.name: Scheduler "shared" is refused for its own settings, so the profile is not served until it is fixed: spec.featureGates.NoSuchGate: Invalid value: true: unrecognized feature gate`}},
		{name: "warnings of risky settings: advice, never a refusal",
			profile: func() *schedulingv1alpha1.SchedulerProfile {
				p := testutil.MakeProfile("risky").Obj()
				p.Spec.PercentageOfNodesToScore = ptr.To[int32](5)
				p.Spec.Extenders = []schedulingv1alpha1.Extender{
					{URLPrefix: "http://a", FilterVerb: ptr.To("filter")},
					{URLPrefix: "http://b", FilterVerb: ptr.To("filter"), Ignorable: ptr.To(true)},
				}
				return p
			}(),
			wantWarnings: []string{
				`SPA206: spec.percentageOfNodesToScore 5: above 100 nodes, only 5% of the feasible nodes are scored`,
				`SPA402: the scheduler's extenders (spec.extenders, 2) switch off opportunistic batching`,
				`SPA502: spec.extenders[0] (filterVerb filter) is not ignorable`,
				`SPA601: autoscalers (Karpenter, cluster-autoscaler) read pod specs and will not provision for what the scheduler filters by: spec.extenders[0]`,
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := profileValidatorOf(fakePlanner(tc.stored...))
			warnings, err := v.ValidateCreate(t.Context(), tc.profile)
			assertPrefixes(t, "causes", testutil.InvalidCauses(t, err), tc.wantCauses)
			assertPrefixes(t, "warnings", warnings, tc.wantWarnings)
		})
	}
}

// assertPrefixes checks that got has as many entries as want, each starting with its want.
func assertPrefixes(t *testing.T, what string, got, want []string) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = strings.HasPrefix(got[i], want[i])
	}
	if !ok {
		t.Errorf("%s:\n  got:  %q\n  want: %q (prefixes)", what, got, want)
	}
}

func TestProfileValidatorUpdate(t *testing.T) {
	stored := createdAt(testutil.MakeProfile("team").Obj(), 10)
	youngerClaimant := createdAt(testutil.MakeProfile("younger").SchedulerName("team").Obj(), 1)
	v := profileValidatorOf(fakePlanner(stored, youngerClaimant))
	ctx := t.Context()

	broken := stored.DeepCopy()
	broken.Spec.PluginConfig = []schedulingv1alpha1.PluginConfig{{Name: "NodeResourcesFit"}}
	broken.Spec.PluginConfig[0].Args.Raw = []byte(invalidScoring)
	if _, err := v.ValidateUpdate(ctx, stored, broken); !apierrors.IsInvalid(err) {
		t.Errorf("An update that breaks the profile: error %v, want Invalid", err)
	}

	// The older profile keeps its name: the younger claimant is the one in conflict.
	relabelled := stored.DeepCopy()
	relabelled.Spec.PercentageOfNodesToScore = ptr.To[int32](50)
	if _, err := v.ValidateUpdate(ctx, stored, relabelled); err != nil {
		t.Errorf("An update of the older claimant of a name: %v", err)
	}

	// A profile stored invalid (before the webhook ran) can still be labelled and deleted.
	labelled := broken.DeepCopy()
	labelled.Labels = map[string]string{"team": "a"}
	if _, err := v.ValidateUpdate(ctx, broken, labelled); err != nil {
		t.Errorf("A metadata-only update of an invalid profile: %v", err)
	}
	deleting := broken.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	deleting.Spec.PercentageOfNodesToScore = ptr.To[int32](50)
	if _, err := v.ValidateUpdate(ctx, broken, deleting); err != nil {
		t.Errorf("An update of a profile being deleted: %v", err)
	}
}

func TestSchedulerValidator(t *testing.T) {
	member := createdAt(testutil.MakeProfile("m").SchedulerRef("shared").Obj(), 5)
	tests := []struct {
		name         string
		scheduler    *schedulingv1alpha1.Scheduler
		wantCauses   []string
		wantWarnings []string
	}{
		{name: "valid", scheduler: testutil.MakeScheduler("shared").Obj()},
		{name: "bad feature gate",
			scheduler: func() *schedulingv1alpha1.Scheduler {
				s := testutil.MakeScheduler("shared").Obj()
				s.Spec.FeatureGates = map[string]bool{"NoSuchGate": true}
				return s
			}(),
			wantCauses: []string{`spec.featureGates.NoSuchGate: `}},
		{name: "invalid extender",
			scheduler:  testutil.MakeScheduler("shared").Extender(schedulingv1alpha1.Extender{URLPrefix: "http://a", PrioritizeVerb: ptr.To("prioritize")}).Obj(),
			wantCauses: []string{`spec.extenders[0].weight: Invalid value: 0: must have a positive weight`}},
		{name: "inline private key (stored before the CRD refused it)",
			scheduler: testutil.MakeScheduler("shared").Extender(schedulingv1alpha1.Extender{URLPrefix: "https://a", Weight: ptr.To[int64](1), PrioritizeVerb: ptr.To("prioritize"),
				TLSConfig: &schedulingv1alpha1.ExtenderTLSConfig{KeyData: []byte("key")}}).Obj(),
			wantCauses: []string{`spec.extenders[0].tlsConfig.keyData: Forbidden: keyData is not accepted`}},
		{name: "filter extender that is not ignorable",
			scheduler:    testutil.MakeScheduler("shared").Extender(schedulingv1alpha1.Extender{URLPrefix: "http://a", FilterVerb: ptr.To("filter")}).Obj(),
			wantWarnings: []string{`spec.extenders[0]: a filter extender that is not ignorable`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := schedulerValidatorOf(fakePlanner(member))
			warnings, err := v.ValidateCreate(t.Context(), tc.scheduler)
			assertPrefixes(t, "causes", testutil.InvalidCauses(t, err), tc.wantCauses)
			assertPrefixes(t, "warnings", warnings, tc.wantWarnings)
		})
	}
}

// TestValidatorsAllowDelete: deletes are not sent (the configuration's rules), and if they were,
// they would pass.
func TestValidatorsAllowDelete(t *testing.T) {
	ctx := context.Background()
	broken := testutil.MakeProfile("bad").PluginConfig("NodeResourcesFit", invalidScoring).Obj()
	if _, err := (profileValidatorOf(fakePlanner(broken))).ValidateDelete(ctx, broken); err != nil {
		t.Errorf("Delete of a profile refused: %v", err)
	}
	if _, err := (schedulerValidatorOf(fakePlanner(broken))).ValidateDelete(ctx, testutil.MakeScheduler("s").Obj()); err != nil {
		t.Errorf("Delete of a Scheduler refused: %v", err)
	}
}

// TestProfileValidatorRenameOntoServedName: an older profile that renames onto a name a younger
// one serves is refused, naming the profile that serves it; while nothing serves the name, the
// older profile gets it.
func TestProfileValidatorRenameOntoServedName(t *testing.T) {
	old := createdAt(testutil.MakeProfile("old").SchedulerName("mine").Obj(), 10)
	young := createdAt(testutil.MakeProfile("young").SchedulerName("team").Obj(), 5)
	serving := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testSettings.Namespace, Name: "young-config-1"},
			Data: map[string]string{plan.ConfigFileKey: "profiles:\n- schedulerName: team\n"}},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: testSettings.Namespace, Name: "young-scheduler",
				Labels: map[string]string{plan.LabelName: "kube-scheduler", plan.LabelManagedBy: schedulingv1alpha1.FieldManager, schedulingv1alpha1.LabelProfile: "young"}},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Volumes: []corev1.Volume{{Name: plan.ConfigVolume, VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "young-config-1"}}}}}}}},
		},
	}
	renamed := old.DeepCopy()
	renamed.Spec.SchedulerName = "team"
	for _, tc := range []struct {
		name       string
		stored     []client.Object
		wantCauses []string
	}{
		{name: "served by the younger profile", stored: append([]client.Object{old, young}, serving...),
			wantCauses: []string{`spec.schedulerName: Invalid value: "team": schedulerName "team" is served by the scheduler of SchedulerProfile "young", which keeps it until it stops serving it`}},
		{name: "claimed but not served: the older profile gets it", stored: []client.Object{old, young}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := profileValidatorOf(fakePlanner(tc.stored...))
			_, err := v.ValidateUpdate(t.Context(), old, renamed)
			assertPrefixes(t, "causes", testutil.InvalidCauses(t, err), tc.wantCauses)
		})
	}
}

// BenchmarkAdmissionReview measures one admission review of a SchedulerProfile end to end, as
// the apiserver sends it: an AdmissionReview encoded as JSON, POSTed over TLS (a kept-alive
// connection, as the apiserver keeps one) to the webhook's handler, which decodes it, renders
// and validates the profile and encodes the answer, which is decoded. The samples are stored, so
// the name checks have profiles to compare with. It reports the 50th and 99th percentiles of
// the reviews' durations besides the mean (ns/op):
//
//	go test ./controllers -run '^$' -bench AdmissionReview -benchtime 300x
func BenchmarkAdmissionReview(b *testing.B) {
	var stored []client.Object
	for _, f := range []string{"binpack", "spread", "nodepool"} {
		stored = append(stored, readSample(b, "../config/samples/scheduling_v1alpha1_schedulerprofile_"+f+".yaml"))
	}
	handler := admission.WithValidator(scheme.New(), profileValidatorOf(fakePlanner(stored...)))
	srv := httptest.NewTLSServer(handler)
	defer srv.Close()
	client := srv.Client()

	nodePool := readSample(b, "../config/samples/scheduling_v1alpha1_schedulerprofile_nodepool.yaml")
	nodePool.Name, nodePool.Spec.SchedulerName = "nodepool-2", "nodepool-2"
	for _, bc := range []struct {
		name    string
		profile *schedulingv1alpha1.SchedulerProfile
		allowed bool
	}{
		{name: "valid", profile: nodePool, allowed: true},
		{name: "refused", profile: testutil.MakeProfile("broken").PluginConfig("NodeResourcesFit", invalidScoring).Obj()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body := admissionReview(b, bc.profile)
			durations := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				if got := review(b, client, srv.URL+"/validate", body); got != bc.allowed {
					b.Fatalf("allowed %v, want %v", got, bc.allowed)
				}
				durations = append(durations, time.Since(start))
			}
			slices.Sort(durations)
			b.ReportMetric(percentile(durations, 50), "p50-ms")
			b.ReportMetric(percentile(durations, 99), "p99-ms")
		})
	}
}

// percentile is the p-th percentile of sorted durations, in milliseconds.
func percentile(sorted []time.Duration, p int) float64 {
	i := (len(sorted)*p+99)/100 - 1
	return float64(sorted[max(i, 0)].Microseconds()) / 1000
}

func readSample(b *testing.B, path string) *schedulingv1alpha1.SchedulerProfile {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	p := &schedulingv1alpha1.SchedulerProfile{}
	if err := yaml.UnmarshalStrict(data, p); err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	return p
}

// admissionReview is the JSON of the review of p's creation.
func admissionReview(b *testing.B, p *schedulingv1alpha1.SchedulerProfile) []byte {
	p = p.DeepCopy()
	p.APIVersion, p.Kind = schedulingv1alpha1.GroupVersion.String(), "SchedulerProfile"
	raw, err := json.Marshal(p)
	if err != nil {
		b.Fatal(err)
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "bench",
			Kind:      metav1.GroupVersionKind{Group: schedulingv1alpha1.GroupVersion.Group, Version: schedulingv1alpha1.GroupVersion.Version, Kind: "SchedulerProfile"},
			Operation: admissionv1.Create,
			Name:      p.Name,
			Object:    runtime.RawExtension{Raw: raw},
		},
	}
	data, err := json.Marshal(review)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// review POSTs an AdmissionReview and decodes the answer.
func review(b *testing.B, c *http.Client, url string, body []byte) bool {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		b.Fatal(err)
	}
	if out.Response == nil || out.Response.UID != "bench" {
		b.Fatalf("no response to the review: %+v", out)
	}
	return out.Response.Allowed
}

// mostAllocated asks for bin-packing and leaves the scorers against it on: SPA104 and SPA105.
const mostAllocated = `{"scoringStrategy": {"type": "MostAllocated"}}`

// TestAdmissionWarnsOfAdvice: the webhook admits a profile with advice and returns it as
// warnings, the cluster checks included (a PriorityClass that preempts, with preemption off),
// and for a member with its Scheduler's extenders; the annotation silences a code.
func TestAdmissionWarnsOfAdvice(t *testing.T) {
	preempting := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	filterExtender := []schedulingv1alpha1.Extender{{URLPrefix: "http://a", FilterVerb: ptr.To("filter"), Ignorable: ptr.To(true)}}
	shared := testutil.MakeScheduler("shared").Obj()
	shared.Spec.Extenders = filterExtender
	tests := []struct {
		name    string
		stored  []client.Object
		profile *schedulingv1alpha1.SchedulerProfile
		want    []string
	}{
		{name: "bin-packing outvoted", profile: testutil.MakeProfile("p").PluginConfig("NodeResourcesFit", mostAllocated).Obj(),
			want: []string{"SPA101: bin-packing", "SPA104: bin-packing", "SPA105: bin-packing"}},
		{name: "bin-packing outvoted, SPA101 and SPA105 silenced", profile: func() *schedulingv1alpha1.SchedulerProfile {
			p := testutil.MakeProfile("p").PluginConfig("NodeResourcesFit", mostAllocated).Obj()
			p.Annotations = map[string]string{schedulingv1alpha1.AnnotationAdviceIgnore: "SPA101,SPA105"}
			return p
		}(), want: []string{"SPA104: bin-packing"}},
		{name: "preemption off with a PriorityClass that preempts", stored: []client.Object{preempting},
			profile: func() *schedulingv1alpha1.SchedulerProfile {
				p := testutil.MakeProfile("p").Obj()
				p.Spec.Plugins = &schedulingv1alpha1.Plugins{PostFilter: schedulingv1alpha1.PluginSet{Disabled: []schedulingv1alpha1.Plugin{{Name: "DefaultPreemption"}}}}
				return p
			}(), want: []string{"SPA501: DefaultPreemption does not run at postFilter, while 1 PriorityClasses may preempt"}},
		{name: "a member, with its Scheduler's extender", stored: []client.Object{createdAt(shared, 10)},
			profile: testutil.MakeProfile("m").SchedulerRef("shared").Obj(),
			want: []string{"SPA402: the scheduler's extenders (spec.extenders, 1)",
				"SPA601: autoscalers (Karpenter, cluster-autoscaler) read pod specs and will not provision for what the scheduler filters by: spec.extenders[0]"}},
		{name: "the default profile", stored: []client.Object{preempting}, profile: testutil.MakeProfile("p").Obj()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := profileValidatorOf(fakePlanner(tc.stored...))
			warnings, err := v.ValidateCreate(t.Context(), tc.profile)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			assertPrefixes(t, "warnings", warnings, tc.want)
		})
	}
}
