package maketest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedops/scheduler-profile-operator/internal/gomods"
)

// laggingTools are the tools modules that may require a module at an older version than the
// operator, each with why. A tool that lags compiles its own copy of that module and of every
// package that imports it (for k8s.io or golang.org/x, most of what it builds).
var laggingTools = map[string]string{
	"hack/tools/golangci-lint": "the linters build against the go/analysis and x/tools versions they pin; make verify builds it, make test does not",
	"hack/tools/crd-ref-docs":  "make verify builds it, make test does not",
}

// TestToolModulesFollowTheOperator: the Go build cache shares a compiled package between two
// builds only when its module version and those of everything it imports are the same. The tools
// modules that make demo and make test build (kwok, kubectl, kubelet, Karpenter, OLM, promtool,
// Helm, kustomize, the image builder) and the plugin example therefore require every module they
// share with the operator at the operator's version at least: a tool one patch behind on
// google.golang.org/protobuf or k8s.io/client-go compiles most of Kubernetes' client packages
// again (Karpenter 726 packages instead of 107, OLM 1,316 instead of 431).
func TestToolModulesFollowTheOperator(t *testing.T) {
	operator, err := gomods.Versions(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
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
		have, err := gomods.Versions(gomod)
		if err != nil {
			t.Fatal(err)
		}
		older, err := gomods.Older(have, operator)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(older) > 0 {
			var lines, get []string
			for _, m := range older {
				lines = append(lines, m.String())
				get = append(get, m.Path+"@"+m.Want)
			}
			t.Errorf("%s requires %d modules at an older version than the operator's go.mod, so their packages are compiled twice:\n  %s\nrun: (cd %s && go get %s && go mod tidy)",
				name, len(older), strings.Join(lines, "\n  "), name, strings.Join(get, " "))
		}
	}
}
