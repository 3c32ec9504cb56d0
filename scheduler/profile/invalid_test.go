package profile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// invalidProfile is an entry of the invalid-profile table, testdata/invalid/profiles.yaml.
type invalidProfile struct {
	Name string `json:"name"`
	// Spec is the profile's spec in YAML.
	Spec string `json:"spec"`
	// Want are the errors, exactly, in order.
	Want []string `json:"want"`
}

// TestValidateInvalid renders the profiles of the invalid-profile table, which the scheduler
// would refuse (or that are surely mistakes), and checks the exact errors Validate reports, with
// their SchedulerProfile paths. The webhook tests of test/integration use the same table.
func TestValidateInvalid(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "invalid", "profiles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var tests []invalidProfile
	if err := yaml.UnmarshalStrict(data, &tests); err != nil {
		t.Fatalf("Reading the table: %v", err)
	}
	if len(tests) == 0 {
		t.Fatal("The invalid-profile table is empty")
	}
	for _, tc := range tests {
		t.Run(tc.Name, func(t *testing.T) {
			p := &v1alpha1.SchedulerProfile{}
			p.Name = "invalid"
			if err := yaml.UnmarshalStrict([]byte(tc.Spec), &p.Spec); err != nil {
				t.Fatalf("parsing the spec: %v", err)
			}
			cfg := mustRender(t, p)
			errs := Validate(cfg.YAML)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.Want, "\n") {
				t.Errorf("errors:\n  got:  %q\n  want: %q", got, tc.Want)
			}
		})
	}
}
