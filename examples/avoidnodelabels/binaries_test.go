package avoidnodelabels_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The binaries under test: this module's manager and scheduler, and the operator's stock
// manager. `make test-example` passes those it built in EXAMPLE_BIN_DIR and STOCK_MANAGER;
// without them, TestMain builds them.
var exampleManager, exampleScheduler, stockManager string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir := os.Getenv("EXAMPLE_BIN_DIR")
	stockManager = os.Getenv("STOCK_MANAGER")
	if dir == "" || stockManager == "" {
		tmp, err := os.MkdirTemp("", "avoidnodelabels")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(tmp) //nolint:errcheck // a temporary directory
		dir, stockManager = tmp, filepath.Join(tmp, "stock-manager")
		for out, pkg := range map[string]string{
			filepath.Join(tmp, "manager"):        "./cmd/manager",
			filepath.Join(tmp, "kube-scheduler"): "./cmd/kube-scheduler",
			stockManager:                         "github.com/schedops/scheduler-profile-operator",
		} {
			if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, b)
				return 1
			}
		}
	}
	exampleManager, exampleScheduler = filepath.Join(dir, "manager"), filepath.Join(dir, "kube-scheduler")
	return m.Run()
}

// command runs a binary and returns its exit code, stdout and stderr.
func command(t *testing.T, stdin string, name string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errorsAs(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("running %s: %v", name, err)
	return 0, "", ""
}

func errorsAs(err error, exit **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError) //nolint:errorlint // exec.Cmd.Run returns it unwrapped
	*exit = e
	return ok
}

// profile is a SchedulerProfile that enables AvoidNodeLabels with args.
func profile(args string) string {
	return `apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: avoid}
spec:
  plugins:
    filter:
      enabled: [{name: AvoidNodeLabels}]
  pluginConfig:
  - name: AvoidNodeLabels
    args: ` + args + "\n"
}

func TestRender(t *testing.T) {
	tests := []struct {
		name     string
		manager  *string
		profile  string
		wantCode int
		want     []string
	}{
		{
			name: "valid args", manager: &exampleManager, profile: profile("{labels: [dedicated.example.com/batch]}"),
			want: []string{"    name: AvoidNodeLabels", "      - dedicated.example.com/batch", "      - name: AvoidNodeLabels"},
		},
		{
			// The scheduler defaults them (TestScheduler); the configuration keeps them as written.
			name: "defaulted args", manager: &exampleManager, profile: profile("{}"),
			want: []string{"    name: AvoidNodeLabels"},
		},
		{
			name: "an unknown field", manager: &exampleManager, profile: profile("{labels: [a], bogus: 1}"), wantCode: 1,
			want: []string{"SchedulerProfile avoid is invalid:", "spec.pluginConfig[0].args.bogus: Forbidden: unknown field"},
		},
		{
			name: "an invalid value", manager: &exampleManager, profile: profile("{labels: [a, not a key]}"), wantCode: 1,
			want: []string{"SchedulerProfile avoid is invalid:", `spec.pluginConfig[0].args.labels[1]: Invalid value: "not a key"`},
		},
		{
			name: "the example manager does not know the stock plugins", manager: &exampleManager, wantCode: 1,
			profile: `apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: avoid}
spec:
  pluginConfig:
  - name: NodePool
    args: {nodeSelector: {}}
`,
			want: []string{"SchedulerProfile avoid is invalid:", `spec.pluginConfig[0].name: Not found: "NodePool"`},
		},
		{
			name: "the stock manager does not know the plugin", manager: &stockManager, profile: profile("{labels: [a]}"), wantCode: 1,
			want: []string{"SchedulerProfile avoid is invalid:", `spec.pluginConfig[0].name: Not found: "AvoidNodeLabels"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := command(t, tc.profile, *tc.manager, "render", "-f", "-")
			if code != tc.wantCode {
				t.Fatalf("exit code %d, want %d; stdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			out := stdout
			if tc.wantCode != 0 {
				out = stderr
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("output does not contain %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestRenderExampleProfile: the example profile renders, and draws no advice about the plugin
// itself: it signs pods and has QueueingHints, as a plugin should. Its one advice is that
// autoscalers cannot see what it filters by (SPA601), which is true of any out-of-tree filter.
func TestRenderExampleProfile(t *testing.T) {
	code, stdout, stderr := command(t, "", exampleManager, "render", "-f", "testdata/avoid.yaml")
	if code != 0 {
		t.Fatalf("exit code %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// A heading naming the profile, then one line per advice.
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "SPA601") || !strings.Contains(lines[1], "filter plugin AvoidNodeLabels") {
		t.Errorf("want only SPA601 naming AvoidNodeLabels on the example profile, got:\n%s", stderr)
	}
}

func TestPlugins(t *testing.T) {
	for _, tc := range []struct {
		manager *string
		want    string
		notWant string
	}{
		{manager: &exampleManager, want: "AvoidNodeLabels out-of-tree Filter", notWant: "NodePool "},
		{manager: &stockManager, want: "NodePool out-of-tree PreFilter,Filter", notWant: "AvoidNodeLabels "},
	} {
		code, stdout, stderr := command(t, "", *tc.manager, "plugins")
		if code != 0 {
			t.Fatalf("%s plugins: exit code %d, stderr:\n%s", *tc.manager, code, stderr)
		}
		// One space between the columns, however wide tabwriter made them.
		lines := strings.Join(strings.Fields(strings.ReplaceAll(stdout, "\n", " \n ")), " ")
		if !strings.Contains(lines, tc.want) || strings.Contains(lines, tc.notWant) {
			t.Errorf("%s plugins lists, want %q and not %q:\n%s", *tc.manager, tc.want, tc.notWant, stdout)
		}
	}
}

// TestScheduler runs the example scheduler's own start-up (strict decoding, defaulting,
// validation, building the plugins) on configurations, as the operator's rollout does: with
// --write-config-to it exits before contacting the apiserver.
func TestScheduler(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeFile(t, kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: unused, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: unused, context: {cluster: unused}}]
current-context: unused
`)
	tests := []struct {
		name     string
		args     string
		wantCode int
		want     string
	}{
		{name: "valid args", args: "{labels: [dedicated.example.com/batch]}", want: "- dedicated.example.com/batch"},
		{name: "defaulted args", args: "{}", want: "- avoid.example.com/reserved"},
		{name: "an unknown field", args: "{labels: [a], bogus: 1}", wantCode: 1, want: `decoding args for plugin AvoidNodeLabels: strict decoding error: unknown field \"bogus\"`},
		{name: "an invalid value", args: "{labels: [not a key]}", wantCode: 1, want: `initializing plugin \"AvoidNodeLabels\": labels[0]: Invalid value: \"not a key\"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			config, written := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "written.yaml")
			writeFile(t, config, `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: `+kubeconfig+`}
leaderElection: {leaderElect: false}
profiles:
- schedulerName: avoid
  plugins:
    filter:
      enabled: [{name: AvoidNodeLabels}]
  pluginConfig:
  - name: AvoidNodeLabels
    args: `+tc.args+"\n")
			code, stdout, stderr := command(t, "", exampleScheduler, "--config", config, "--secure-port", "0", "--write-config-to", written)
			if code != tc.wantCode {
				t.Fatalf("exit code %d, want %d; stdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			out := stderr
			if code == 0 {
				b, err := os.ReadFile(written)
				if err != nil {
					t.Fatal(err)
				}
				out = string(b)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("want %q in:\n%s", tc.want, out)
			}
		})
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
