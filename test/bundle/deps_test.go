package bundle

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOperatorFrameworkStaysInTests: github.com/operator-framework/api is a requirement of
// go.mod for the bundle generator (hack/bundle) and this package's tests only; the operator and
// the scheduler must not link it (nor operator-sdk).
func TestOperatorFrameworkStaysInTests(t *testing.T) {
	pkgs := []string{".", "./scheduler"}
	cmd := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...)
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %v: %v", pkgs, err)
	}
	deps := strings.Fields(string(out))
	// Sanity: the list is the real one.
	if !containsPrefix(deps, "sigs.k8s.io/controller-runtime") || !containsPrefix(deps, "github.com/schedops/scheduler-profile-operator/controllers") {
		t.Fatalf("go list -deps %v lists neither controller-runtime nor the controllers (%d packages)", pkgs, len(deps))
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "github.com/operator-framework/") {
			t.Errorf("%v depend on %s", pkgs, dep)
		}
	}
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
