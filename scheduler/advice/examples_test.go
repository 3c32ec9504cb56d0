package advice_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/advice"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// root is the repository, from this package's directory.
const root = "../.."

// exampleAdvice are the codes that an example raises because it is about them, by
// "file: profile name". Every other example of the repository must raise none.
var exampleAdvice = map[string][]string{
	// An extender's HTTP calls cannot be batched: the example is about extenders.
	"scheduler/profile/testdata/extender.yaml: gpu": {"SPA402", "SPA601"},
	// The example of docs/concepts/advice.md: bin-packing that the default scorers outvote.
	"docs/examples/outvoted-binpack.yaml: outvoted-binpack": {"SPA101", "SPA104", "SPA105"},
}

// clusterAdvice are the codes that a sample raises on the cluster of the docs' simulations
// (docs/examples/simulate/cluster.yaml), by "file: profile name".
var clusterAdvice = map[string][]string{}

// example is one SchedulerProfile of a file, with the Scheduler that runs it when the file
// has it.
type example struct {
	where     string
	profile   *v1alpha1.SchedulerProfile
	scheduler *v1alpha1.Scheduler
}

// TestExamplesRaiseNoAdvice: the samples (config/samples), the profiles of the render goldens
// (scheduler/profile/testdata) and the profiles in the docs' YAML (docs/, README.md) raise no
// advice unless exampleAdvice says they are about it; the samples raise none on the docs'
// example cluster unless clusterAdvice says so.
func TestExamplesRaiseNoAdvice(t *testing.T) {
	samples := examplesIn(t, globs(t, "config/samples/*.yaml", "config/samples/*/*.yaml"), false)
	goldens := examplesIn(t, globs(t, "scheduler/profile/testdata/*.yaml"), false)
	docs := examplesIn(t, globs(t, "README.md", "docs/*/*.md", "docs/examples/*.yaml"), true)
	// Fewer than these means the files moved or their parsing broke, not that all is well.
	for _, c := range []struct {
		what     string
		got, min int
	}{{"samples", len(samples), 5}, {"golden profiles", len(goldens), 8}, {"docs' profiles", len(docs), 5}} {
		if c.got < c.min {
			t.Errorf("found %d %s, want at least %d", c.got, c.what, c.min)
		}
	}
	seen := map[string]bool{}
	for _, ex := range slices.Concat(samples, goldens, docs) {
		seen[ex.where] = true
		checkAdvice(t, ex, nil, exampleAdvice[ex.where])
	}
	cluster := docsCluster(t)
	for _, ex := range samples {
		seen["cluster "+ex.where] = true
		checkAdvice(t, ex, cluster, clusterAdvice[ex.where])
	}
	for where := range exampleAdvice {
		if !seen[where] {
			t.Errorf("exampleAdvice names %s, which is no example", where)
		}
	}
	for where := range clusterAdvice {
		if !seen["cluster "+where] {
			t.Errorf("clusterAdvice names %s, which is no sample", where)
		}
	}
}

func checkAdvice(t *testing.T, ex example, cluster *advice.Cluster, want []string) {
	t.Helper()
	cfg, gates := render(t, ex)
	if cfg == nil {
		return
	}
	got, err := advice.For(cfg, gates, cluster, ex.profile)
	if err != nil {
		t.Errorf("%s: %v", ex.where, err)
		return
	}
	if codes := advice.Codes(got); !slices.Equal(codes, want) {
		on := ""
		if cluster != nil {
			on = " on the docs' cluster"
		}
		t.Errorf("%s raises %v%s, want %v: %v", ex.where, codes, on, want, got)
	}
}

// render renders an example as the operator does: alone, or as the one profile of its
// Scheduler's process. It returns nil for a profile that is invalid (a doc's counter-example).
func render(t *testing.T, ex example) ([]byte, map[string]bool) {
	t.Helper()
	proc := profile.Process{Namespace: "advice-test", LeaseName: "advice-test", Extenders: ex.profile.Spec.Extenders}
	gates := ex.profile.Spec.Scheduler.FeatureGates
	if ex.scheduler != nil {
		proc.Extenders, gates = ex.scheduler.Spec.Extenders, ex.scheduler.Spec.FeatureGates
	}
	entry, err := profile.RenderProfile(ex.profile)
	if err != nil {
		return nil, nil
	}
	cfg, err := profile.RenderProcess(proc, []profile.Profile{entry})
	if err != nil || len(profile.ValidateWithGates(cfg.YAML, gates, nil)) > 0 {
		t.Logf("%s: invalid, not checked", ex.where)
		return nil, nil
	}
	return cfg.YAML, gates
}

func globs(t *testing.T, patterns ...string) []string {
	t.Helper()
	var out []string
	for _, p := range patterns {
		files, err := filepath.Glob(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, files...)
	}
	return out
}

// examplesIn reads the SchedulerProfiles of YAML files, or of the yaml blocks of markdown
// pages (markdown), with the Scheduler of the same file that each names.
func examplesIn(t *testing.T, files []string, markdown bool) []example {
	t.Helper()
	var out []example
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		chunks := [][]byte{data}
		if strings.HasSuffix(file, ".md") {
			chunks = yamlBlocks(data)
		} else if markdown && !bytes.Contains(data, []byte("kind: SchedulerProfile")) {
			continue
		}
		rel, _ := filepath.Rel(root, file)
		for _, chunk := range chunks {
			out = append(out, profilesOf(t, rel, chunk)...)
		}
	}
	return out
}

// yamlBlocks are the fenced yaml blocks of a markdown page that hold a SchedulerProfile.
func yamlBlocks(page []byte) [][]byte {
	var out [][]byte
	var cur *bytes.Buffer
	for _, line := range strings.Split(string(page), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```yaml":
			cur = &bytes.Buffer{}
		case cur != nil && trimmed == "```":
			if bytes.Contains(cur.Bytes(), []byte("kind: SchedulerProfile")) {
				out = append(out, cur.Bytes())
			}
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return out
}

// profilesOf decodes the documents of one YAML stream; those that do not decode strictly (a
// doc's sketch with "[...]") are left out.
func profilesOf(t *testing.T, where string, data []byte) []example {
	t.Helper()
	var profiles []*v1alpha1.SchedulerProfile
	schedulers := map[string]*v1alpha1.Scheduler{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		var meta metav1.TypeMeta
		if yaml.Unmarshal(doc, &meta) != nil || meta.APIVersion != v1alpha1.GroupVersion.String() {
			continue
		}
		switch meta.Kind {
		case "SchedulerProfile":
			p := &v1alpha1.SchedulerProfile{}
			if err := yaml.UnmarshalStrict(doc, p); err != nil {
				t.Logf("%s: a SchedulerProfile that does not decode, not checked: %v", where, err)
				continue
			}
			profiles = append(profiles, p)
		case "Scheduler":
			s := &v1alpha1.Scheduler{}
			if yaml.UnmarshalStrict(doc, s) == nil {
				schedulers[s.Name] = s
			}
		}
	}
	var out []example
	for _, p := range profiles {
		out = append(out, example{where: where + ": " + p.Name, profile: p, scheduler: schedulers[p.Spec.SchedulerRef.Name]})
	}
	return out
}

// docsCluster is the nodes and PriorityClasses of the docs' example cluster.
func docsCluster(t *testing.T) *advice.Cluster {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs/examples/simulate/cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []struct {
			Kind string `json:"kind"`
		} `json:"items"`
	}
	if err := yaml.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Items []map[string]any `json:"items"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	cluster := &advice.Cluster{}
	for i, item := range raw.Items {
		doc, err := yaml.Marshal(item)
		if err != nil {
			t.Fatal(err)
		}
		switch list.Items[i].Kind {
		case "Node":
			var n corev1.Node
			if err := yaml.Unmarshal(doc, &n); err != nil {
				t.Fatal(err)
			}
			cluster.Nodes = append(cluster.Nodes, n)
		case "PriorityClass":
			var pc schedulingv1.PriorityClass
			if err := yaml.Unmarshal(doc, &pc); err != nil {
				t.Fatal(err)
			}
			cluster.PriorityClasses = append(cluster.PriorityClasses, pc)
		}
	}
	if len(cluster.Nodes) == 0 {
		t.Fatal("the docs' cluster has no nodes")
	}
	return cluster
}
