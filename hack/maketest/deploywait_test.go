package maketest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeKubectl answers rollout status with $ROLLOUT_EXIT and fails the first $FAIL_CREATES server-side
// dry runs with $CREATE_ERROR; it logs its arguments to $FAKE_DIR/calls and each manifest it was
// given to $FAKE_DIR/manifest.
const fakeKubectl = `#!/usr/bin/env bash
echo "$*" >> "$FAKE_DIR/calls"
case "$*" in
*"rollout status"*) exit "$ROLLOUT_EXIT" ;;
*"create --dry-run=server"*)
	cat > "$FAKE_DIR/manifest"
	n=$(grep -c create "$FAKE_DIR/calls")
	if ((n <= FAIL_CREATES)); then echo "$CREATE_ERROR" >&2; exit 1; fi
	echo schedulerprofile.scheduling.schedops.io/make-deploy-check-x7k2q ;;
*) echo "unexpected: $*" >&2; exit 1 ;;
esac
`

const (
	refused = `Error from server (InternalError): Internal error occurred: failed calling webhook "schedulerprofiles.scheduling.schedops.io": ` +
		`failed to call webhook: Post "https://scheduler-profile-operator-webhook-service.scheduler-profile-operator-system.svc:443/validate": dial tcp 10.0.0.1:443: connect: connection refused`
	denied = `Error from server (Forbidden): admission webhook "schedulerprofiles.scheduling.schedops.io" denied the request: spec.plugins: Invalid value`
)

// TestDeployWait: hack/deploy-wait.sh waits for the rollout, then retries the dry run until the
// webhook answers, and fails with a message saying what it waited for.
func TestDeployWait(t *testing.T) {
	tests := []struct {
		name                     string
		rolloutExit, failCreates int
		createError              string
		wantExit                 int
		// wantCreates is the number of dry runs, or their minimum when it is negative.
		wantCreates int
		wantOutput  string
	}{
		{name: "available and answering", wantCreates: 1, wantOutput: "make deploy: the operator's webhook answers"},
		{name: "webhook answers on the third dry run", failCreates: 2, createError: refused, wantCreates: 3, wantOutput: "the operator's webhook answers"},
		{
			name: "Deployment not available", rolloutExit: 1, wantExit: 1,
			wantOutput: "make deploy: the operator's Deployment ns/op is not available after 2s",
		},
		{
			// 2 s of dry runs 0.2 s apart: several.
			name: "webhook never answers", failCreates: 1000, createError: refused, wantExit: 1, wantCreates: -3,
			wantOutput: "make deploy: the operator's webhook does not answer after 2s (a server-side dry run of " + sample + "): " + refused,
		},
		{
			name: "webhook refuses the sample", failCreates: 1000, createError: denied, wantExit: 1, wantCreates: 1,
			wantOutput: "make deploy: the operator's webhook refused the sample " + sample + ": " + denied,
		},
	}
	script, err := filepath.Abs(filepath.Join(root, "hack/deploy-wait.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(fakeKubectl), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(script, "ns", "op", sample, "2")
			cmd.Dir = root
			cmd.Env = makeEnv("PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKE_DIR="+dir, "DEPLOY_POLL_SECONDS=0.2",
				"ROLLOUT_EXIT="+strconv.Itoa(tc.rolloutExit), "FAIL_CREATES="+strconv.Itoa(tc.failCreates), "CREATE_ERROR="+tc.createError)
			out, err := cmd.CombinedOutput()
			exit := 0
			if exitErr, ok := err.(*exec.ExitError); ok {
				exit = exitErr.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if exit != tc.wantExit {
				t.Errorf("exit status %d, want %d\n%s", exit, tc.wantExit, out)
			}
			if !strings.Contains(string(out), tc.wantOutput) {
				t.Errorf("output does not say %q:\n%s", tc.wantOutput, out)
			}
			calls, err := os.ReadFile(filepath.Join(dir, "calls"))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
			if want := "-n ns rollout status deployment/op --timeout=2s"; lines[0] != want {
				t.Errorf("first kubectl call %q, want %q", lines[0], want)
			}
			creates := len(lines) - 1
			if (tc.wantCreates >= 0 && creates != tc.wantCreates) || creates < -tc.wantCreates {
				t.Errorf("%d dry runs, want %d (at least, if negative):\n%s", creates, tc.wantCreates, calls)
			}
			if creates == 0 {
				return
			}
			if want := "create --dry-run=server -o name -f -"; lines[1] != want {
				t.Errorf("dry run %q, want %q", lines[1], want)
			}
			manifest, err := os.ReadFile(filepath.Join(dir, "manifest"))
			if err != nil {
				t.Fatal(err)
			}
			// The sample under a generated name: a profile of its name may exist already.
			if !strings.Contains(string(manifest), "metadata:\n  generateName: make-deploy-check-\nspec:\n") || strings.Contains(string(manifest), "name: binpack") {
				t.Errorf("the dry run's profile is not the sample with a generated name:\n%s", manifest)
			}
		})
	}
}

// sample is make deploy's DEPLOY_CHECK_PROFILE.
const sample = "config/samples/scheduling_v1alpha1_schedulerprofile_binpack.yaml"
