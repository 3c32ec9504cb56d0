package core

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/deploy"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestAppliedObjectsShareNoMaps: an apply decodes the apiserver's answer into its apply
// configuration, and passes apply at once. So no configuration a pass applies may hold a map of
// its inputs (the default requests, the cached profile's spec), or the answers of two passes are
// written into that map together. Here every object of a pass takes an answer with one more key in
// each of its maps, and a second pass of the same inputs must build what the first built before.
func TestAppliedObjectsShareNoMaps(t *testing.T) {
	for _, p := range []*schedulingv1alpha1.SchedulerProfile{
		testutil.MakeProfile("defaults").Replicas(2).Obj(),
		testutil.MakeProfile("placed").SchedulerSettings(schedulingv1alpha1.SchedulerSettings{
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
			},
			NodeSelector: map[string]string{"pool": "system"},
		}).Obj(),
	} {
		t.Run(p.Name, func(t *testing.T) {
			r := fakeObjects()
			proc, cfg := dedicated(p), testConfig(t, p)
			before := marshalDesired(t, r.desiredObjects(proc, cfg, testSettings.Image))
			for _, o := range r.desiredObjects(proc, cfg, testSettings.Image) {
				answer := addKeyToEveryObject(t, o.Desired)
				if err := json.Unmarshal(answer, o.Desired); err != nil {
					t.Fatalf("decoding the answer into %T: %v", o.Desired, err)
				}
			}
			if diff := cmp.Diff(before, marshalDesired(t, r.desiredObjects(proc, cfg, testSettings.Image))); diff != "" {
				t.Errorf("the answers to one pass changed what the next builds (-before +after):\n%s", diff)
			}
		})
	}
}

func marshalDesired(t *testing.T, objs []deploy.Owned) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		data, err := json.Marshal(o.Desired)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(data))
	}
	return out
}

// addKeyToEveryObject is obj as JSON with a key "answer-added" of value "1" in each of its
// objects: a struct's decode ignores it, a map's takes it.
func addKeyToEveryObject(t *testing.T, obj any) []byte {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	var add func(any)
	add = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				add(e)
			}
			v["answer-added"] = "1"
		case []any:
			for _, e := range v {
				add(e)
			}
		}
	}
	add(v)
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
