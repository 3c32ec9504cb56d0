package controllers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/scheme"
	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

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
	handler := admission.WithValidator(scheme.New(), profileValidatorOf(fakeObjects(stored...)))
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
