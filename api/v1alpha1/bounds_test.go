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
	"SchedulerProfile .spec.scheduler.tolerations[]": "core/v1 Toleration; the list has MaxItems and a rule bounds its strings",
	"SchedulerProfile .spec.pluginConfig[].args":     "plugin args, decoded strictly as <name>Args and bounded with the whole configuration (MaxConfigBytes)",
	"Scheduler .apiVersion":                          "TypeMeta, checked by the apiserver",
	"Scheduler .kind":                                "TypeMeta, checked by the apiserver",
	"Scheduler .spec.affinity":                       "core/v1 Affinity",
	"Scheduler .spec.resources":                      "core/v1 ResourceRequirements",
	"Scheduler .spec.tolerations[]":                  "core/v1 Toleration; the list has MaxItems and a rule bounds its strings",
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
			for _, p := range unboundedNodes(crd.Spec.Names.Kind, "", v.Schema.OpenAPIV3Schema, used) {
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

// unboundedNodes are the nodes of kind's schema s, at path, that have no bound; used records the
// unboundedSubtrees entries met. Functions, not a type: kube-api-linter checks every type in api/.
func unboundedNodes(kind, path string, s *apiextensionsv1.JSONSchemaProps, used map[string]bool) []string {
	if s == nil {
		return nil
	}
	if key := kind + " " + path; unboundedSubtrees[key] != "" {
		used[key] = true
		return nil
	}
	var out []string
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		out = append(out, path+": keeps unknown fields, so nothing in it is bounded")
	}
	switch {
	case s.XIntOrString:
		if s.MaxLength == nil {
			out = append(out, path+": int-or-string without maxLength")
		}
	case s.Type == "string":
		if s.MaxLength == nil && len(s.Enum) == 0 && s.Format != "date-time" {
			out = append(out, path+": string without maxLength")
		}
	case s.Type == "array":
		if s.MaxItems == nil {
			out = append(out, path+": list without maxItems")
		}
		if s.Items != nil {
			out = append(out, unboundedNodes(kind, path+"[]", s.Items.Schema, used)...)
		}
	case s.Type == "object":
		for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
			prop := s.Properties[name]
			out = append(out, unboundedNodes(kind, path+"."+name, &prop, used)...)
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			out = append(out, unboundedMap(kind, path, s, used)...)
		}
	}
	return out
}

// unboundedMap is unboundedNodes for a map: maxProperties, a rule that bounds its keys, and its
// values (strings bounded by maxLength or by a rule).
func unboundedMap(kind, path string, s *apiextensionsv1.JSONSchemaProps, used map[string]bool) []string {
	var out []string
	if s.MaxProperties == nil {
		out = append(out, path+": map without maxProperties")
	}
	rules := make([]string, 0, len(s.XValidations))
	for _, r := range s.XValidations {
		rules = append(rules, r.Rule)
	}
	all := strings.Join(rules, "\n")
	if !keyBound.MatchString(all) {
		out = append(out, path+": map without a rule that bounds its keys (size(k) <= N)")
	}
	value := s.AdditionalProperties.Schema
	if value.Type == "string" && value.MaxLength == nil {
		if !valueBound.MatchString(all) {
			out = append(out, path+": map of strings without a rule that bounds its values (size(self[k]) <= N)")
		}
		return out
	}
	return append(out, unboundedNodes(kind, path+"{}", value, used)...)
}
