package gomods

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestOlder: the comparison is semantic versioning's: a pseudo-version before a release is older
// than it, +incompatible is ignored, equal versions and modules the operator does not require are
// not listed, and a version that is not one is an error.
func TestOlder(t *testing.T) {
	want := map[string]string{
		"google.golang.org/protobuf":    "v1.36.12-0.20260120151049-f2248ac996af",
		"k8s.io/client-go":              "v0.37.2",
		"github.com/evanphx/json-patch": "v5.9.11+incompatible",
		"golang.org/x/net":              "v0.57.0",
	}
	have := map[string]string{
		"google.golang.org/protobuf":    "v1.36.12",
		"k8s.io/client-go":              "v0.35.1",
		"github.com/evanphx/json-patch": "v5.6.0+incompatible",
		"golang.org/x/net":              "v0.57.0",
		"sigs.k8s.io/karpenter":         "v1.14.1",
	}
	got, err := Older(have, want)
	if err != nil {
		t.Fatal(err)
	}
	wantOlder := []string{
		"github.com/evanphx/json-patch v5.6.0+incompatible < v5.9.11+incompatible",
		"k8s.io/client-go v0.35.1 < v0.37.2",
	}
	var gotOlder []string
	for _, m := range got {
		gotOlder = append(gotOlder, m.String())
	}
	if !slices.Equal(gotOlder, wantOlder) {
		t.Errorf("Older = %q, want %q", gotOlder, wantOlder)
	}
	if _, err := Older(map[string]string{"a": "master"}, map[string]string{"a": "v1.0.0"}); err == nil {
		t.Error("Older accepted the version \"master\"")
	}
}

// TestVersions: a go.mod's requirements, with the version of a replace of the same path.
func TestVersions(t *testing.T) {
	gomod := filepath.Join(t.TempDir(), "go.mod")
	text := "module example.com/m\n\ngo 1.26\n\nrequire (\n\tk8s.io/api v0.0.0\n\tgolang.org/x/net v0.57.0 // indirect\n)\n\nreplace k8s.io/api => k8s.io/api v0.37.2\n\nreplace example.com/x => ../x\n"
	if err := os.WriteFile(gomod, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Versions(gomod)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "map[golang.org/x/net:v0.57.0 k8s.io/api:v0.37.2]" {
		t.Errorf("Versions = %v", got)
	}
}
