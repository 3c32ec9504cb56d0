package profile

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/registry"
)

// pluginSetField is one plugin set of a Plugins type: its Go name and its JSON name.
type pluginSetField struct{ goName, jsonName string }

func fieldsOf(t reflect.Type) []pluginSetField {
	var out []pluginSetField
	for f := range t.Fields() {
		out = append(out, pluginSetField{f.Name, strings.Split(f.Tag.Get("json"), ",")[0]})
	}
	return out
}

// checkExtensionPoints compares every place that knows the extension points with upstream's
// configv1.Plugins: the API type, the renderer's type, the validator's list and the registry's
// table. A Kubernetes bump that adds an extension point fails here until each of them knows it.
func checkExtensionPoints(apiType, renderedType reflect.Type, validatorNames, registryNames []string) []string {
	upstream := fieldsOf(reflect.TypeFor[configv1.Plugins]())
	var problems []string
	for what, got := range map[string][]pluginSetField{"the API's Plugins": fieldsOf(apiType), "the renderer's renderedPlugins": fieldsOf(renderedType)} {
		if d := cmp.Diff(upstream, got, cmp.AllowUnexported(pluginSetField{})); d != "" {
			problems = append(problems, what+" differs from configv1.Plugins (-upstream +ours):\n"+d)
		}
	}
	var jsonNames, goNames []string
	for _, f := range upstream {
		jsonNames = append(jsonNames, f.jsonName)
		if f.goName != "MultiPoint" {
			goNames = append(goNames, f.goName)
		}
	}
	if d := cmp.Diff(jsonNames, validatorNames); d != "" {
		problems = append(problems, "the validator's extension points differ from configv1.Plugins (-upstream +ours):\n"+d)
	}
	if d := cmp.Diff(goNames, registryNames); d != "" {
		problems = append(problems, "the registry's extension points differ from configv1.Plugins without multiPoint (-upstream +ours):\n"+d)
	}
	return problems
}

func TestExtensionPointsMatchUpstream(t *testing.T) {
	for _, p := range checkExtensionPoints(reflect.TypeFor[v1alpha1.Plugins](), reflect.TypeFor[renderedPlugins](), extensionPoints, registry.ExtensionPointNames()) {
		t.Error(p)
	}
}

// TestExtensionPointsCheckFailsOnDrift shows that the check above can fail: a copy of the API type
// with one extra extension point is reported.
func TestExtensionPointsCheckFailsOnDrift(t *testing.T) {
	type pluginsWithNewPoint struct {
		v1alpha1.Plugins
		PreDecide v1alpha1.PluginSet `json:"preDecide,omitempty"`
	}
	extended := reflect.StructOf(append(slices.Collect(reflect.TypeFor[v1alpha1.Plugins]().Fields()), reflect.TypeFor[pluginsWithNewPoint]().Field(1)))
	problems := checkExtensionPoints(extended, reflect.TypeFor[renderedPlugins](), extensionPoints, registry.ExtensionPointNames())
	if len(problems) != 1 || !strings.Contains(problems[0], "the API's Plugins") || !strings.Contains(problems[0], "preDecide") {
		t.Fatalf("want one problem naming the API type and preDecide, got %q", problems)
	}
}

// TestRenderCarriesEveryExtensionPoint enables one plugin at each extension point of the API and
// checks that the rendered configuration has it at the same point.
func TestRenderCarriesEveryExtensionPoint(t *testing.T) {
	p := &v1alpha1.SchedulerProfile{}
	p.Name = "every-point"
	p.Spec.Plugins = &v1alpha1.Plugins{}
	v := reflect.ValueOf(p.Spec.Plugins).Elem()
	want := map[string]string{}
	for f, set := range v.Fields() {
		name := "Plugin" + f.Name
		set.Set(reflect.ValueOf(v1alpha1.PluginSet{Enabled: []v1alpha1.Plugin{{Name: name}}}))
		want[strings.Split(f.Tag.Get("json"), ",")[0]] = name
	}
	cfg, err := Render(p, Settings{Namespace: testNamespace})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Profiles []struct {
			Plugins map[string]configv1.PluginSet `json:"plugins"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(cfg.YAML, &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for point, set := range doc.Profiles[0].Plugins {
		for _, pl := range set.Enabled {
			got[point] = pl.Name
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rendered plugins per extension point (-want +got):\n%s", d)
	}
}
