package projection

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// req is a node selector requirement.
func req(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// term is a node selector term of requirements.
func term(reqs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: reqs}
}

// withRequired is a pod whose required node affinity has the terms.
func withRequired(terms ...corev1.NodeSelectorTerm) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}}}
}

// TestProject: the pod's terms are ANDed with the restriction's, each with each, and the pod is
// annotated; an opted-out or already projected pod, and a restriction without terms, are left.
func TestProject(t *testing.T) {
	poolB := Restriction{Terms: []corev1.NodeSelectorTerm{term(req("pool", corev1.NodeSelectorOpIn, "b"))}, Sources: []string{"NodePool nodeSelector (pool=b)"}}
	zones := Restriction{Terms: []corev1.NodeSelectorTerm{term(req("zone", corev1.NodeSelectorOpIn, "z1")), term(req("zone", corev1.NodeSelectorOpIn, "z2"))}}
	ssd := req("disk", corev1.NodeSelectorOpIn, "ssd")
	pool := req("pool", corev1.NodeSelectorOpIn, "b")
	byName := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		r         Restriction
		wantTerms []corev1.NodeSelectorTerm // nil: the pod keeps no required affinity
		wrote     bool
	}{
		{"pod without affinity", &corev1.Pod{}, poolB, []corev1.NodeSelectorTerm{term(pool)}, true},
		{"pod with its own required term", withRequired(term(ssd)), poolB, []corev1.NodeSelectorTerm{term(ssd, pool)}, true},
		{"pod with ORed terms", withRequired(term(ssd), term(req("gpu", corev1.NodeSelectorOpExists))), poolB,
			[]corev1.NodeSelectorTerm{term(ssd, pool), term(req("gpu", corev1.NodeSelectorOpExists), pool)}, true},
		{"pod's term by field keeps its field", withRequired(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{byName}}), poolB,
			[]corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{pool}, MatchFields: []corev1.NodeSelectorRequirement{byName}}}, true},
		{"pod's empty term selects nothing still", withRequired(term(), term(ssd)), poolB, []corev1.NodeSelectorTerm{{}, term(ssd, pool)}, true},
		{"ORed terms on both sides", withRequired(term(ssd), term(pool)), zones, []corev1.NodeSelectorTerm{
			term(ssd, req("zone", corev1.NodeSelectorOpIn, "z1")), term(ssd, req("zone", corev1.NodeSelectorOpIn, "z2")),
			term(pool, req("zone", corev1.NodeSelectorOpIn, "z1")), term(pool, req("zone", corev1.NodeSelectorOpIn, "z2"))}, true},
		{"opted out by annotation", func() *corev1.Pod {
			p := withRequired(term(ssd))
			p.Annotations = map[string]string{v1alpha1.AnnotationProjectNodeRestrictions: "false"}
			return p
		}(), poolB, []corev1.NodeSelectorTerm{term(ssd)}, false},
		{"projected already", func() *corev1.Pod {
			p := withRequired(term(ssd, pool))
			p.Annotations = map[string]string{v1alpha1.AnnotationProjectedNodeRestrictions: "SchedulerProfile x: NodePool"}
			return p
		}(), poolB, []corev1.NodeSelectorTerm{term(ssd, pool)}, false},
		{"profile without restrictions", withRequired(term(ssd)), Restriction{}, []corev1.NodeSelectorTerm{term(ssd)}, false},
		{"profile without restrictions, pod without affinity", &corev1.Pod{}, Restriction{}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod.DeepCopy()
			wrote := Project(pod, tt.r, tt.r.Note("p"))
			if wrote != tt.wrote {
				t.Errorf("Project wrote %t, want %t", wrote, tt.wrote)
			}
			var got []corev1.NodeSelectorTerm
			if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
				got = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			}
			if diff := cmp.Diff(tt.wantTerms, got); diff != "" {
				t.Errorf("required terms (-want +got):\n%s", diff)
			}
			note, annotated := pod.Annotations[v1alpha1.AnnotationProjectedNodeRestrictions]
			if tt.wrote && note != tt.r.Note("p") {
				t.Errorf("annotation %q, want %q", note, tt.r.Note("p"))
			}
			if !tt.wrote && annotated != (tt.pod.Annotations[v1alpha1.AnnotationProjectedNodeRestrictions] != "") {
				t.Errorf("a pod left alone got the annotation %q", note)
			}
		})
	}
}

// TestOf reads the restrictions of rendered profiles: NodePool's selector and addedAffinity's
// required terms, ANDed, only while their plugins filter.
func TestOf(t *testing.T) {
	render := func(t *testing.T, spec v1alpha1.SchedulerProfileSpec) []byte {
		t.Helper()
		cfg, err := profile.Render(&v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: spec}, profile.Settings{Namespace: "ns"})
		if err != nil {
			t.Fatal(err)
		}
		return cfg.YAML
	}
	nodePool := v1alpha1.PluginConfig{Name: "NodePool", Args: rawJSON(`{"nodeSelector":{"matchLabels":{"pool":"b"},"matchExpressions":[{"key":"arch","operator":"NotIn","values":["arm64"]}]}}`)}
	added := v1alpha1.PluginConfig{Name: "NodeAffinity", Args: rawJSON(`{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[` +
		`{"matchExpressions":[{"key":"zone","operator":"In","values":["z1"]}]},{"matchExpressions":[{"key":"zone","operator":"In","values":["z2"]}]}]},` +
		`"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"preference":{"matchExpressions":[{"key":"spot","operator":"Exists"}]}}]}}`)}
	enabled := func(names ...string) *v1alpha1.Plugins {
		ps := &v1alpha1.Plugins{}
		for _, n := range names {
			ps.MultiPoint.Enabled = append(ps.MultiPoint.Enabled, v1alpha1.Plugin{Name: n})
		}
		return ps
	}
	pool := term(req("pool", corev1.NodeSelectorOpIn, "b"), req("arch", corev1.NodeSelectorOpNotIn, "arm64"))
	z1, z2 := req("zone", corev1.NodeSelectorOpIn, "z1"), req("zone", corev1.NodeSelectorOpIn, "z2")
	tests := []struct {
		name string
		spec v1alpha1.SchedulerProfileSpec
		want []corev1.NodeSelectorTerm // nil: no restriction
	}{
		{"default profile", v1alpha1.SchedulerProfileSpec{}, nil},
		{"NodePool", v1alpha1.SchedulerProfileSpec{Plugins: enabled("NodePool"), PluginConfig: []v1alpha1.PluginConfig{nodePool}}, []corev1.NodeSelectorTerm{pool}},
		{"NodePool selecting every node", v1alpha1.SchedulerProfileSpec{Plugins: enabled("NodePool"),
			PluginConfig: []v1alpha1.PluginConfig{{Name: "NodePool", Args: rawJSON(`{"nodeSelector":{}}`)}}}, nil},
		{"NodePool disabled at filter", v1alpha1.SchedulerProfileSpec{Plugins: func() *v1alpha1.Plugins {
			ps := enabled("NodePool")
			ps.Filter.Disabled = []v1alpha1.Plugin{{Name: "NodePool"}}
			return ps
		}(), PluginConfig: []v1alpha1.PluginConfig{nodePool}}, nil},
		{"addedAffinity's required terms", v1alpha1.SchedulerProfileSpec{PluginConfig: []v1alpha1.PluginConfig{added}}, []corev1.NodeSelectorTerm{term(z1), term(z2)}},
		{"NodeAffinity disabled at filter", v1alpha1.SchedulerProfileSpec{Plugins: &v1alpha1.Plugins{Filter: v1alpha1.PluginSet{Disabled: []v1alpha1.Plugin{{Name: "*"}}}},
			PluginConfig: []v1alpha1.PluginConfig{added}}, nil},
		{"both, ANDed", v1alpha1.SchedulerProfileSpec{Plugins: enabled("NodePool"), PluginConfig: []v1alpha1.PluginConfig{nodePool, added}},
			[]corev1.NodeSelectorTerm{term(append([]corev1.NodeSelectorRequirement{z1}, pool.MatchExpressions...)...), term(append([]corev1.NodeSelectorRequirement{z2}, pool.MatchExpressions...)...)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Of(render(t, tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			r, ok := got["p"]
			if ok != (tt.want != nil) {
				t.Fatalf("restriction of p: %v, want one: %t", got, tt.want != nil)
			}
			if diff := cmp.Diff(tt.want, r.Terms); diff != "" {
				t.Errorf("terms (-want +got):\n%s", diff)
			}
			if ok && len(r.Sources) == 0 {
				t.Error("a restriction names no source")
			}
		})
	}
}

// rawJSON is plugin args as the API holds them.
func rawJSON(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }
