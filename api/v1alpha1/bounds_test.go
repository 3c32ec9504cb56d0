package v1alpha1_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// unboundedSubtrees are the parts of the CRDs' schemas that the walk of TestEveryFieldIsBounded
// does not enter, by kind and path, each with why. They are upstream types embedded whole, whose
// schemas carry no bounds and cannot take markers of ours, and the plugins' args, which have no
// schema. Anything else that is a list, a string or a map must have a bound, so a new unbounded
// field fails the test. An entry that matches nothing fails it too.
var unboundedSubtrees = map[string]string{
	"SchedulerProfile .apiVersion":                   "TypeMeta, checked by the apiserver",
	"SchedulerProfile .kind":                         "TypeMeta, checked by the apiserver",
	"SchedulerProfile .spec.scheduler.affinity":      "core/v1 Affinity",
	"SchedulerProfile .spec.scheduler.resources":     "core/v1 ResourceRequirements",
	"SchedulerProfile .spec.scheduler.tolerations[]": "core/v1 Toleration; the list has MaxItems",
	"SchedulerProfile .spec.pluginConfig[].args":     "plugin args, decoded strictly as <name>Args and bounded with the whole configuration (MaxConfigBytes)",
	"Scheduler .apiVersion":                          "TypeMeta, checked by the apiserver",
	"Scheduler .kind":                                "TypeMeta, checked by the apiserver",
	"Scheduler .spec.affinity":                       "core/v1 Affinity",
	"Scheduler .spec.resources":                      "core/v1 ResourceRequirements",
	"Scheduler .spec.tolerations[]":                  "core/v1 Toleration; the list has MaxItems",
}

// Rules of a map that bound its keys and its string values: a schema cannot bound either.
var (
	keyBound   = regexp.MustCompile(`size\(k\) <= \d+`)
	valueBound = regexp.MustCompile(`size\(self\[k\]\) <= \d+`)
)

// TestEveryFieldIsBounded walks the OpenAPI schemas of config/crd/bases: every list has
// maxItems, every string maxLength (or an enum, or the date-time format of metav1.Time), and every
// map maxProperties and rules that bound its keys and string values, except in unboundedSubtrees.
// kube-api-linter's maxlength checks the strings and lists of our Go types but neither maps nor
// what the markers of a field make of a type such as metav1.Duration; this checks what the
// apiserver enforces.
func TestEveryFieldIsBounded(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) != 2 {
		t.Fatalf("want the two CRDs, found %v (%v)", files, err)
	}
	used := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			w := &boundsWalk{kind: crd.Spec.Names.Kind, used: used}
			w.walk("", v.Schema.OpenAPIV3Schema)
			for _, p := range w.unbounded {
				t.Errorf("%s %s %s", crd.Spec.Names.Kind, v.Name, p)
			}
		}
	}
	for key := range unboundedSubtrees {
		if !used[key] {
			t.Errorf("unboundedSubtrees names %q, which is not in the CRDs", key)
		}
	}
}

// boundsWalk collects the unbounded nodes of one kind's schema.
type boundsWalk struct {
	kind      string
	used      map[string]bool
	unbounded []string
}

func (w *boundsWalk) walk(path string, s *apiextensionsv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	if key := w.kind + " " + path; unboundedSubtrees[key] != "" {
		w.used[key] = true
		return
	}
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		w.unbounded = append(w.unbounded, path+": keeps unknown fields, so nothing in it is bounded")
	}
	switch {
	case s.XIntOrString:
		if s.MaxLength == nil {
			w.unbounded = append(w.unbounded, path+": int-or-string without maxLength")
		}
	case s.Type == "string":
		if s.MaxLength == nil && len(s.Enum) == 0 && s.Format != "date-time" {
			w.unbounded = append(w.unbounded, path+": string without maxLength")
		}
	case s.Type == "array":
		if s.MaxItems == nil {
			w.unbounded = append(w.unbounded, path+": list without maxItems")
		}
		if s.Items != nil {
			w.walk(path+"[]", s.Items.Schema)
		}
	case s.Type == "object":
		w.walkObject(path, s)
	}
}

func (w *boundsWalk) walkObject(path string, s *apiextensionsv1.JSONSchemaProps) {
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		prop := s.Properties[name]
		w.walk(path+"."+name, &prop)
	}
	if s.AdditionalProperties == nil || s.AdditionalProperties.Schema == nil {
		return
	}
	if s.MaxProperties == nil {
		w.unbounded = append(w.unbounded, path+": map without maxProperties")
	}
	rules := make([]string, 0, len(s.XValidations))
	for _, r := range s.XValidations {
		rules = append(rules, r.Rule)
	}
	all := strings.Join(rules, "\n")
	if !keyBound.MatchString(all) {
		w.unbounded = append(w.unbounded, path+": map without a rule that bounds its keys (size(k) <= N)")
	}
	value := s.AdditionalProperties.Schema
	if value.Type == "string" && value.MaxLength == nil {
		if !valueBound.MatchString(all) {
			w.unbounded = append(w.unbounded, path+": map of strings without a rule that bounds its values (size(self[k]) <= N)")
		}
		return
	}
	w.walk(path+"{}", value)
}
