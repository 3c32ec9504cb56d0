package conditions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSetOn(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []Use
		wantErr string
	}{
		{"one kind", "SchedulerProfile Available=False.", []Use{{"SchedulerProfile", "Available", "False"}}, ""},
		{"two kinds", "SchedulerProfile ConfigValid=False, Degraded=True; Scheduler Degraded=True.",
			[]Use{{"SchedulerProfile", "ConfigValid", "False"}, {"SchedulerProfile", "Degraded", "True"}, {"Scheduler", "Degraded", "True"}}, ""},
		{"no period", "SchedulerProfile Available=False", nil, "must end the doc comment"},
		{"an unknown kind", "Pod Available=False.", nil, "the kind must be one of"},
		{"an unknown status", "Scheduler Available=Maybe.", nil, "the status one of"},
		{"twice", "Scheduler Available=False, Available=False.", nil, "twice"},
	}
	for _, tc := range cases {
		got, err := parseSetOn(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: parseSetOn(%q) = %v, want an error with %q", tc.name, tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: parseSetOn(%q): %v", tc.name, tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: parseSetOn(%q) (-want +got):\n%s", tc.name, tc.in, diff)
		}
	}
}

func TestParse(t *testing.T) {
	const types = `package v1alpha1

// Condition types.
const (
	// ConditionAvailable is True when it runs.
	ConditionAvailable = "Available"
	// ConditionDegraded is True when it needs a human.
	ConditionDegraded = "Degraded"
)
`
	cases := []struct {
		name    string
		reasons string
		wantErr string
	}{
		{"valid", `
// Reasons of the Available condition.
const (
	// ReasonNotServed means it does not run. Set on: SchedulerProfile Available=False.
	ReasonNotServed = "NotServed"
)`, ""},
		{"no Set on", `
// Reasons of the Available condition.
const (
	// ReasonNotServed means it does not run.
	ReasonNotServed = "NotServed"
)`, "does not end with"},
		{"not set on its block's condition", `
// Reasons of the Available condition.
const (
	// ReasonNotServed means it does not run. Set on: SchedulerProfile Degraded=True.
	ReasonNotServed = "NotServed"
)`, "is declared among the reasons of Available, but is not set on it"},
		{"an unknown condition", `
// Reasons of the Available condition.
const (
	// ReasonNotServed means it does not run. Set on: SchedulerProfile Available=False, Ready=True.
	ReasonNotServed = "NotServed"
)`, "Ready, which is not a condition type"},
	}
	for _, tc := range cases {
		path := filepath.Join(t.TempDir(), "conditions.go")
		if err := os.WriteFile(path, []byte(types+tc.reasons+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Parse(path)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: Parse = %v, want an error with %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Parse: %v", tc.name, err)
			continue
		}
		if got := c.ReasonsOn("SchedulerProfile", "Available", "False"); !cmp.Equal(got, []string{"NotServed"}) {
			t.Errorf("%s: ReasonsOn = %q, want [NotServed]", tc.name, got)
		}
		if r, _ := c.Reason("NotServed"); r.Doc != "Means it does not run." {
			t.Errorf("%s: the doc of NotServed is %q, want it without the Set on sentence", tc.name, r.Doc)
		}
	}
}
