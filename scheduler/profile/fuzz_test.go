package profile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// FuzzRenderValidate feeds arbitrary profile specs to Render and Validate: neither may panic, and
// Render must give the same bytes and hash every time for the same spec.
func FuzzRenderValidate(f *testing.F) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		var p v1alpha1.SchedulerProfile
		if err := yaml.Unmarshal(data, &p); err != nil {
			f.Fatal(err)
		}
		spec, err := yaml.Marshal(p.Spec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(spec)
	}
	f.Add([]byte(`{pluginConfig: [{name: NodePool, args: {nodeSelector: {matchLabels: {pool: a}}, bogus: 1}}]}`))
	f.Add([]byte(`{plugins: {queueSort: {disabled: [{name: "*"}]}}, extenders: [{urlPrefix: "http://x", bindVerb: b}]}`))

	f.Fuzz(func(t *testing.T, spec []byte) {
		p := &v1alpha1.SchedulerProfile{}
		p.Name = "fuzz"
		if err := yaml.Unmarshal(spec, &p.Spec); err != nil {
			return
		}
		first, err := Render(p, Settings{Namespace: testNamespace})
		if err != nil {
			return
		}
		second, err := Render(p.DeepCopy(), Settings{Namespace: testNamespace})
		if err != nil {
			t.Fatalf("the second Render of the same spec failed: %v", err)
		}
		if !bytes.Equal(first.YAML, second.YAML) || first.Hash != second.Hash {
			t.Fatalf("Render is not deterministic:\n%s\n---\n%s", first.YAML, second.YAML)
		}
		_ = Validate(first.YAML)
	})
}

// BenchmarkValidate measures one validation of a profile with our two plugins and their args:
// the cost the operator pays on every spec change.
func BenchmarkValidate(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "nodepool.golden"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if errs := Validate(data); len(errs) > 0 {
			b.Fatal(errs.ToAggregate())
		}
	}
}
