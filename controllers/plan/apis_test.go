package plan

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestMissingAPI(t *testing.T) {
	served := &metav1.APIResourceList{GroupVersion: "scheduling.k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "workloads"}, {Name: "podgroups"}}}
	withoutPodGroups := &metav1.APIResourceList{GroupVersion: "scheduling.k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "workloads"}}}
	// What every 1.37 apiserver serves by default, and a default 1.37 scheduler watches.
	resourceV1 := &metav1.APIResourceList{GroupVersion: "resource.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "resourceclaims"}, {Name: "devicetaintrules"}}}
	withoutTaintRules := &metav1.APIResourceList{GroupVersion: "resource.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "resourceclaims"}}}
	composite := &metav1.APIResourceList{GroupVersion: "scheduling.k8s.io/v1alpha3", APIResources: []metav1.APIResource{{Name: "compositepodgroups"}}}
	tests := []struct {
		name      string
		resources []*metav1.APIResourceList
		gates     map[string]bool
		want      string
	}{
		{name: "no gates", gates: nil},
		{name: "a gate that needs no API", gates: map[string]bool{"SchedulerAsyncAPICalls": true}},
		{name: "the gate off", gates: map[string]bool{"GenericWorkload": false}},
		{name: "served", resources: []*metav1.APIResourceList{served}, gates: map[string]bool{"GenericWorkload": true}},
		{name: "group version not served", gates: map[string]bool{"GenericWorkload": true}, want: "feature gate GenericWorkload needs the API scheduling.k8s.io/v1beta1 podgroups"},
		{name: "resource not served", resources: []*metav1.APIResourceList{withoutPodGroups}, gates: map[string]bool{"GenericWorkload": true}, want: "--runtime-config=scheduling.k8s.io/v1beta1=true"},
		{name: "composite pod groups not served", resources: []*metav1.APIResourceList{served}, gates: map[string]bool{"GenericWorkload": true, "TopologyAwareWorkloadScheduling": true, "CompositePodGroup": true},
			want: "feature gate CompositePodGroup needs the API scheduling.k8s.io/v1alpha3 compositepodgroups, which the cluster does not serve"},
		{name: "composite pod groups served", resources: []*metav1.APIResourceList{served, composite}, gates: map[string]bool{"GenericWorkload": true, "TopologyAwareWorkloadScheduling": true, "CompositePodGroup": true}},
		{name: "a gate on by default whose resource is switched off", resources: []*metav1.APIResourceList{withoutTaintRules},
			want: "feature gate DRADeviceTaintRules needs the API resource.k8s.io/v1 devicetaintrules, which the cluster does not serve (kube-apiserver --runtime-config=resource.k8s.io/v1/devicetaintrules=true serves it); the scheduler would never sync its caches, so nothing is rolled out; the gate is on by default: set featureGates DRADeviceTaintRules: false to run without the API"},
		{name: "that gate off", resources: []*metav1.APIResourceList{withoutTaintRules}, gates: map[string]bool{"DRADeviceTaintRules": false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resources := tc.resources
			if !slices.ContainsFunc(resources, func(l *metav1.APIResourceList) bool { return l.GroupVersion == "resource.k8s.io/v1" }) {
				resources = append(resources, resourceV1)
			}
			d := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: resources}}
			got, err := NewServedAPIs(d).Missing(tc.gates)
			if err != nil {
				t.Fatal(err)
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("missingAPI = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestServedAPIsAreAskedUntilServed: a missing API is asked for again on every check, so that it
// is found once turned on; a served one is asked for once.
func TestServedAPIsAreAskedUntilServed(t *testing.T) {
	fake := &clienttesting.Fake{}
	apis := NewServedAPIs(&fakediscovery.FakeDiscovery{Fake: fake})
	gang := map[string]bool{"GenericWorkload": true, "DRADeviceTaintRules": false}
	for range 2 {
		if got, err := apis.Missing(gang); err != nil || got == "" {
			t.Fatalf("missing = %q, %v; want the API missing", got, err)
		}
	}
	if n := len(fake.Actions()); n != 2 {
		t.Errorf("2 checks of a missing API asked discovery %d times, want 2", n)
	}
	fake.Resources = []*metav1.APIResourceList{{GroupVersion: "scheduling.k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "podgroups"}}}}
	for range 3 {
		if got, err := apis.Missing(gang); err != nil || got != "" {
			t.Fatalf("missing = %q, %v; want the API served", got, err)
		}
	}
	if n := len(fake.Actions()); n != 3 {
		t.Errorf("after it was served, 3 more checks asked discovery %d times in all, want 3 (once more)", n)
	}
}
