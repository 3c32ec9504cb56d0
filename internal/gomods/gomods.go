// Package gomods compares the module versions of two go.mod files. The Go build cache shares a
// compiled package between two builds only when its module version and those of everything it
// imports are the same, so a module built beside the operator (a tools module, the plugin example,
// the previous release) requires every module it shares with the operator at the operator's
// version at least: one a patch behind on google.golang.org/protobuf or k8s.io/client-go compiles
// most of Kubernetes' client packages again.
package gomods

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// goModule is what `go mod edit -json` prints of a go.mod: its requirements and replacements.
type goModule struct {
	Require []struct{ Path, Version string }
	Replace []struct {
		Old struct{ Path string }
		New struct{ Path, Version string }
	}
}

// Versions returns the version each module required by the go.mod file builds with, the
// replacement's where a replace of the same path gives one.
func Versions(gomod string) (map[string]string, error) {
	out, err := exec.Command("go", "mod", "edit", "-json", gomod).Output()
	if err != nil {
		return nil, fmt.Errorf("go mod edit -json %s: %w", gomod, err)
	}
	var m goModule
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("go mod edit -json %s: %w", gomod, err)
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
	return versions, nil
}

// Module is a module that one go.mod requires at an older version (Have) than another (Want).
type Module struct {
	Path, Have, Want string
}

func (m Module) String() string { return fmt.Sprintf("%s %s < %s", m.Path, m.Have, m.Want) }

// Older returns, sorted by path, the modules that have requires at an older version than want,
// by semantic versioning (a pseudo-version before a release is older than it); modules that want
// does not require are left out.
func Older(have, want map[string]string) ([]Module, error) {
	var older []Module
	for path, hv := range have {
		wv, ok := want[path]
		if !ok || wv == hv {
			continue
		}
		a, err := version.ParseSemantic(hv)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", path, hv, err)
		}
		b, err := version.ParseSemantic(wv)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", path, wv, err)
		}
		if a.LessThan(b) {
			older = append(older, Module{Path: path, Have: hv, Want: wv})
		}
	}
	slices.SortFunc(older, func(a, b Module) int { return strings.Compare(a.Path, b.Path) })
	return older, nil
}
