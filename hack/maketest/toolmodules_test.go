package maketest

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

// laggingTools are the tools modules that may require a module at an older version than the
// operator, each with why. A tool that lags compiles its own copy of that module and of every
// package that imports it (for k8s.io or golang.org/x, most of what it builds).
var laggingTools = map[string]string{
	"hack/tools/golangci-lint": "the linters build against the go/analysis and x/tools versions they pin; make verify builds it, make test does not",
	"hack/tools/crd-ref-docs":  "make verify builds it, make test does not",
}

// goModule is what `go mod edit -json` prints of a go.mod: its requirements and replacements.
type goModule struct {
	Require []struct{ Path, Version string }
	Replace []struct {
		Old struct{ Path string }
		New struct{ Path, Version string }
	}
}

// moduleVersions returns the version each module required by the go.mod in dir builds with, the
// replacement's where a replace gives one.
func moduleVersions(t *testing.T, dir string) map[string]string {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json in %s: %v", dir, err)
	}
	var m goModule
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("go mod edit -json in %s: %v", dir, err)
	}
	versions := map[string]string{}
	for _, r := range m.Require {
		versions[r.Path] = r.Version
	}
	for _, r := range m.Replace {
		if r.New.Version != "" && r.New.Path == r.Old.Path {
			versions[r.Old.Path] = r.New.Version
		}
	}
	return versions
}

// olderModules returns, sorted, the modules that tool requires at an older version than operator,
// as "path vTool < vOperator".
func olderModules(tool, operator map[string]string) ([]string, error) {
	var older []string
	for path, tv := range tool {
		ov, ok := operator[path]
		if !ok || ov == tv {
			continue
		}
		a, err := version.ParseSemantic(tv)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", path, tv, err)
		}
		b, err := version.ParseSemantic(ov)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", path, ov, err)
		}
		if a.LessThan(b) {
			older = append(older, fmt.Sprintf("%s %s < %s", path, tv, ov))
		}
	}
	slices.Sort(older)
	return older, nil
}

// TestToolModulesFollowTheOperator: the Go build cache shares a compiled package between two
// builds only when its module version and those of everything it imports are the same. The tools
// modules that make demo and make test build (kwok, kubectl, kubelet, Karpenter, OLM, promtool,
// Helm, kustomize, the image builder) and the plugin example therefore require every module they
// share with the operator at the operator's version at least: a tool one patch behind on
// google.golang.org/protobuf or k8s.io/client-go compiles most of Kubernetes' client packages
// again (Karpenter 726 packages instead of 107, OLM 1,316 instead of 421).
func TestToolModulesFollowTheOperator(t *testing.T) {
	operator := moduleVersions(t, root)
	dirs, err := filepath.Glob(filepath.Join(root, "hack/tools/*/go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, filepath.Join(root, "examples/avoidnodelabels/go.mod"))
	if len(dirs) < 10 {
		t.Fatalf("found %d tools modules, want the ten or more of hack/tools and the example", len(dirs))
	}
	for _, gomod := range dirs {
		dir := filepath.Dir(gomod)
		name, _ := filepath.Rel(root, dir)
		if _, ok := laggingTools[name]; ok {
			continue
		}
		older, err := olderModules(moduleVersions(t, dir), operator)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(older) > 0 {
			var get []string
			for _, o := range older {
				f := strings.Fields(o)
				get = append(get, f[0]+"@"+f[3])
			}
			t.Errorf("%s requires %d modules at an older version than the operator's go.mod, so their packages are compiled twice:\n  %s\nrun: (cd %s && go get %s && go mod tidy)",
				name, len(older), strings.Join(older, "\n  "), name, strings.Join(get, " "))
		}
	}
}

// TestOlderModules: the comparison is semantic versioning's: a pseudo-version before a release
// is older than it, +incompatible is ignored, equal versions and modules the operator does not
// have are not listed.
func TestOlderModules(t *testing.T) {
	operator := map[string]string{
		"google.golang.org/protobuf":    "v1.36.12-0.20260120151049-f2248ac996af",
		"k8s.io/client-go":              "v0.37.2",
		"github.com/evanphx/json-patch": "v5.9.11+incompatible",
		"golang.org/x/net":              "v0.57.0",
	}
	tool := map[string]string{
		"google.golang.org/protobuf":    "v1.36.12",
		"k8s.io/client-go":              "v0.35.1",
		"github.com/evanphx/json-patch": "v5.6.0+incompatible",
		"golang.org/x/net":              "v0.57.0",
		"sigs.k8s.io/karpenter":         "v1.14.1",
	}
	got, err := olderModules(tool, operator)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"github.com/evanphx/json-patch v5.6.0+incompatible < v5.9.11+incompatible",
		"k8s.io/client-go v0.35.1 < v0.37.2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("olderModules = %q, want %q", got, want)
	}
	if _, err := olderModules(map[string]string{"a": "master"}, map[string]string{"a": "v1.0.0"}); err == nil {
		t.Error("olderModules accepted the version \"master\"")
	}
}
