package bundle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	validationerrors "github.com/operator-framework/api/pkg/validation/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// bundleValidators are the validators of `operator-sdk bundle validate
// --select-optional suite=operatorframework`: the default bundle, CSV and CRD checks, and the
// OperatorHub, capability, category, good-practice, removed-API and object checks. The
// multiple-architectures check is left out: it pulls the images from their registry.
var bundleValidators = validation.DefaultBundleValidators.WithValidators(
	validation.OperatorHubV2Validator,
	validation.StandardCapabilitiesValidator,
	validation.StandardCategoriesValidator,
	validation.GoodPracticesValidator,
	validation.AlphaDeprecatedAPIsValidator,
	validation.ObjectValidator,
)

// validateBundle loads the bundle in dir and runs bundleValidators on it, against the CSV's
// minKubeVersion as the Kubernetes version for the removed-API check.
func validateBundle(t *testing.T, dir string) (errs, warns []validationerrors.Error) {
	t.Helper()
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		t.Fatalf("Loading the bundle in %s: %v", dir, err)
	}
	objs := b.ObjectsToValidate()
	if b.CSV != nil {
		objs = append(objs, map[string]string{"k8s-version": b.CSV.Spec.MinKubeVersion})
	}
	for _, result := range bundleValidators.Validate(objs...) {
		errs = append(errs, result.Errors...)
		warns = append(warns, result.Warnings...)
	}
	return errs, warns
}

// TestBundleValidates runs OLM's own validators on bundle/ and fails on any error or warning.
func TestBundleValidates(t *testing.T) {
	errs, warns := validateBundle(t, path(bundleDir))
	for _, e := range errs {
		t.Errorf("Validation error: %v", e)
	}
	for _, w := range warns {
		t.Errorf("Validation warning: %v", w)
	}
	if len(errs) == 0 && len(warns) == 0 {
		t.Logf("bundle/ passes %d validators with no error and no warning", len(bundleValidators))
	}
}

// TestBundleValidationCatchesBrokenCSV shows that the validation above can fail: each case
// breaks a copy of the bundle's CSV and expects an error that names the problem.
func TestBundleValidationCatchesBrokenCSV(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(csv map[string]any)
		wantErr string
	}{
		{
			name:    "no displayName",
			mutate:  func(csv map[string]any) { unstructured.RemoveNestedField(csv, "spec", "displayName") },
			wantErr: "DisplayName",
		},
		{
			name:    "no install strategy",
			mutate:  func(csv map[string]any) { unstructured.RemoveNestedField(csv, "spec", "install") },
			wantErr: "InstallStrategy",
		},
		{
			name:    "no version",
			mutate:  func(csv map[string]any) { unstructured.RemoveNestedField(csv, "spec", "version") },
			wantErr: "Version must be set",
		},
		{
			name:    "no provider",
			mutate:  func(csv map[string]any) { unstructured.RemoveNestedField(csv, "spec", "provider") },
			wantErr: "Provider.Name not specified",
		},
		{
			name: "no supported install mode",
			mutate: func(csv map[string]any) {
				modes, _, _ := unstructured.NestedSlice(csv, "spec", "installModes")
				for _, m := range modes {
					m.(map[string]any)["supported"] = false
				}
				_ = unstructured.SetNestedSlice(csv, modes, "spec", "installModes")
			},
			wantErr: "none of InstallModeTypes are supported",
		},
		{
			name: "alm-examples not JSON",
			mutate: func(csv map[string]any) {
				_ = unstructured.SetNestedField(csv, "[{", "metadata", "annotations", "alm-examples")
			},
			wantErr: "invalid example",
		},
		{
			name:    "minKubeVersion not a version",
			mutate:  func(csv map[string]any) { _ = unstructured.SetNestedField(csv, "1.37", "spec", "minKubeVersion") },
			wantErr: "MinKubeVersion has an invalid value",
		},
		{
			name: "capability level not standard",
			mutate: func(csv map[string]any) {
				_ = unstructured.SetNestedField(csv, "Fully Automatic", "metadata", "annotations", "capabilities")
			},
			wantErr: "capabilities",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyBundle(t)
			csvPath := filepath.Join(dir, "manifests", filepath.Base(csvFile))
			data, err := os.ReadFile(csvPath)
			if err != nil {
				t.Fatal(err)
			}
			var csv map[string]any
			if err := yaml.Unmarshal(data, &csv); err != nil {
				t.Fatal(err)
			}
			tc.mutate(csv)
			if data, err = yaml.Marshal(csv); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(csvPath, data, 0o644); err != nil {
				t.Fatal(err)
			}

			errs, _ := validateBundle(t, dir)
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			if !strings.Contains(strings.Join(msgs, "\n"), tc.wantErr) {
				t.Errorf("Validation errors of the broken CSV: got\n%s\nwant one containing %q", strings.Join(msgs, "\n"), tc.wantErr)
			}
		})
	}
}

// copyBundle copies bundle/ into a temporary directory.
func copyBundle(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src := path(bundleDir)
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatalf("Copying the bundle: %v", err)
	}
	return dst
}
